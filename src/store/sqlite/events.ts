import type { Database } from "better-sqlite3";
import { type EventRow, eventPlacement, withActor } from "../../events/audit-scope.js";
import {
  eventConditions,
  eventListColumns,
  eventRecordOf,
  pruneEventsSql,
  type EventRow as StoredRow,
} from "../rows/event-rows.js";
import { createListSql } from "./list-sql.js";
import { createSqliteFanOut } from "./subscriptions.js";
import type { SyncOps } from "./sync-ops.js";

/** The outbox writes of the SQLite store: an event, in the caller's open transaction. */
export interface SqliteEventWriter {
  /** Append `row`, its data completed with the actor's issuer and subject (for people). */
  append(row: EventRow): void;
}

/** Create the event writer on an open, migrated database. */
export function createSqliteEventWriter(db: Database): SqliteEventWriter {
  const actor = db.prepare("SELECT issuer, subject FROM identities WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // The event's webhook deliveries go with it, in its transaction (the outbox).
  const fanOut = createSqliteFanOut(db);
  return {
    append(row) {
      const who = actor.get(row.actorUid) as { issuer: string; subject: string } | undefined;
      const at = eventPlacement(row);
      insert.run(
        row.id,
        at.uid,
        at.groupUid,
        row.type,
        row.source,
        row.subject,
        row.time,
        row.actorUid,
        withActor(row, who),
      );
      fanOut.deliver(row);
    },
  };
}

/** The event reads of the SQLite store. */
export type EventOps = SyncOps<"listEvents" | "recordChange" | "pruneEvents">;

/** Create the event reads on an open, migrated database. */
export function createEventOps(db: Database): EventOps {
  const lists = createListSql<StoredRow>(db, eventListColumns);
  const prune = db.prepare(pruneEventsSql(() => "?"));
  return {
    listEvents: (query) => {
      const page = lists.list(query, eventConditions(query.filters));
      return { items: page.rows.map(eventRecordOf), total: page.total, hasMore: page.hasMore };
    },
    // The write path appends the event (sqlite-store.ts): there is nothing else to write.
    recordChange: () => undefined,
    pruneEvents: (before, limit) => prune.run(before, limit).changes,
  };
}
