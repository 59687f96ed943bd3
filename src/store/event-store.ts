import type { ListPage, ListQuery } from "./vocabulary.js";

/** A stored event of the audit trail (a CloudEvent; data as JSON text). */
export interface EventRecord {
  /** The event as a child of its subject in the uid tree: `subject/id`. */
  uid: string;
  /** The CloudEvents id. */
  id: string;
  type: string;
  source: string;
  subject: string;
  /** Milliseconds since the epoch. */
  time: number;
  actorUid: string;
  /** JSON text: actor, requestId, protocol, changedFields. */
  data: string;
}

/** Resource filters of listEvents (absent: no filter); all present ones must hold. */
export interface EventFilters {
  /** Exactly this type. */
  type?: string;
  /**
   * Any of these: an exact type (`dev.gatehouse.…`), or a family, whole words of a type
   * (`role_binding`: every role binding event; `auth.person`; `iam`).
   */
  types?: readonly string[];
  actorUid?: string;
  /** At or after this time (ms). */
  since?: number;
  /** Strictly before this time (ms). */
  before?: number;
}

/**
 * The read side of the audit trail; the write side is each backend's write path, which
 * appends a mutating RPC's event in its change's transaction (src/events/audit-scope.ts).
 */
export interface EventStore {
  /**
   * List events. Tree filters work on the event's uid (`subject/id`): childrenOf S gives the
   * events about S, descendantsOf S those about S and everything below it. Sort fields:
   * create_time and update_time are the event's time, name its type.
   */
  listEvents(query: ListQuery<EventFilters>): Promise<ListPage<EventRecord>>;
  /**
   * Record the current mutating call's event about `subjectUid` when the call changed nothing
   * else stored (an STS exchange of a workload): a write of nothing, which the backend's write
   * path turns into the event as for any change. Outside a mutating call it does nothing.
   */
  recordChange(subjectUid: string): Promise<void>;
  /**
   * Delete at most `limit` of the oldest events older than `before` (ms since the epoch), in
   * one short transaction, and return how many went. Retention (src/events/event-retention.ts)
   * calls it batch after batch, so a large prune never holds the writers up for long. The SQL
   * is pruneEventsSql (src/store/rows/event-rows.ts): an event with a webhook delivery still
   * pending is kept until the delivery ends (delivered or abandoned).
   */
  pruneEvents(before: number, limit: number): Promise<number>;
}
