import { type EventRow, eventPlacement, withActor } from "../../events/audit-scope.js";
import {
  eventConditions,
  eventListColumns,
  eventRecordOf,
  pruneEventsSql,
  type EventRow as StoredRow,
} from "../rows/event-rows.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";
import { fanOutPg } from "./subscriptions.js";

/** Append `row` to the outbox on `sql`, the change's open transaction. */
export async function appendPgEvent(sql: Sql, row: EventRow): Promise<void> {
  const who = await sql.one<{ issuer: string; subject: string }>(
    "SELECT issuer, subject FROM identities WHERE uid = $1",
    [row.actorUid],
  );
  const at = eventPlacement(row);
  await sql.run(
    `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      row.id,
      at.uid,
      at.groupUid,
      row.type,
      row.source,
      row.subject,
      row.time,
      row.actorUid,
      withActor(row, who),
    ],
  );
  // The event's webhook deliveries go with it, in its transaction (the outbox).
  await fanOutPg(sql, row);
}

/** The event reads of the PostgreSQL store. */
export type PgEventOps = PgOps<"listEvents" | "recordChange" | "pruneEvents">;

/** Create the event reads on a migrated database. */
export function createPgEventOps(db: PgDb): PgEventOps {
  const lists = createPgListSql<StoredRow>(db, eventListColumns);
  const pruneSql = pruneEventsSql((n) => `$${n}`);
  return {
    listEvents: async (query) => {
      const page = await lists.list(query, eventConditions(query.filters));
      return { items: page.rows.map(eventRecordOf), total: page.total, hasMore: page.hasMore };
    },
    // The write path appends the event (pg-store.ts): there is nothing else to write.
    recordChange: async () => undefined,
    pruneEvents: (before, limit) =>
      // Events are no access answer: the replicas' access caches need not hear of it.
      db.write((sql) => sql.run(pruneSql, [before, limit]), { notify: false }),
  };
}
