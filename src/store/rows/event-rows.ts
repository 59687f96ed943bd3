import type { EventFilters, EventRecord } from "../event-store.js";
import type { ListClause, ListColumns } from "../list-clauses.js";

/** An events row as both backends read it. */
export interface EventRow {
  uid: string;
  id: string;
  type: string;
  source: string;
  subject: string;
  time: number | string;
  actor_uid: string;
  data: string;
}

/** Where the events table keeps what the list SQL needs: an event is a child of its subject. */
export const eventListColumns: ListColumns = {
  table: "events",
  uid: "uid",
  parent: "subject",
  // Through the uid index, the events about S and below S, those about S kept: an event's uid
  // is `subject/id`. The table has no index on subject: a random key, each append wrote a page
  // of it somewhere in the middle (the events migration "narrower audit trail").
  childrenOf: (uid: string) => ({
    sql: "t.uid > ? AND t.uid < ? AND t.subject = ?",
    params: [`${uid}/`, `${uid}0`, uid],
  }),
  group: "group_uid",
  // group_uid is the organization of the subject, the uid's first segment (eventPlacement).
  groupIsUidRoot: true,
  name: "type",
  sort: { name: "type", create_time: "time", update_time: "time", uid: "uid" },
};

/** The record of a row (PostgreSQL returns BIGINT as text). */
export function eventRecordOf(r: EventRow): EventRecord {
  return {
    uid: r.uid,
    id: r.id,
    type: r.type,
    source: r.source,
    subject: r.subject,
    time: Number(r.time),
    actorUid: r.actor_uid,
    data: r.data,
  };
}

/** The conditions of the event filters, with `?` placeholders. */
export function eventConditions(f: EventFilters): ListClause[] {
  const out: ListClause[] = [];
  if (f.type !== undefined) out.push({ sql: "t.type = ?", params: [f.type] });
  if (f.types !== undefined && f.types.length > 0) {
    // Any of them: an exact type, or a family whose words are whole words of the type
    // (`role_binding` is every role_binding type; `_` is LIKE's wildcard, so escaped).
    const terms = f.types.map((t) =>
      t.startsWith("dev.gatehouse.")
        ? { sql: "t.type = ?", param: t }
        : {
            sql: "('.' || t.type || '.') LIKE ? ESCAPE '\\'",
            param: `%.${t.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`,
          },
    );
    out.push({
      sql: `(${terms.map((x) => x.sql).join(" OR ")})`,
      params: terms.map((x) => x.param),
    });
  }
  if (f.actorUid !== undefined) out.push({ sql: "t.actor_uid = ?", params: [f.actorUid] });
  if (f.since !== undefined) out.push({ sql: "t.time >= ?", params: [f.since] });
  if (f.before !== undefined) out.push({ sql: "t.time < ?", params: [f.before] });
  return out;
}

/**
 * The statement of pruneEvents (ops/events.ts): the `limit` oldest events older than
 * `before`, found through the (time, uid) index; its `?` are before, then the limit.
 *
 * An event still owed to a webhook subscriber outlives its retention: a webhook_deliveries row
 * exists only while its delivery is pending (delivered or abandoned, the row goes), so an
 * event with any such row is skipped (through webhook_deliveries_event), and goes at the first
 * prune after its last delivery ends. Skipped events do not use up the batch's limit.
 */
export const pruneEventsSql = `DELETE FROM events WHERE seq IN (
    SELECT e.seq FROM events AS e WHERE e.time < ?
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
    ORDER BY e.time, e.uid LIMIT ?
  )`;
