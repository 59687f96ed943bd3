import { randomUUID } from "node:crypto";
import { parentOf, rootOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import {
  type ClaimedRow,
  claimedOf,
  matchingSubscriptions,
  type SubscriptionRow,
  subscriptionListColumns,
  subscriptionRecordOf,
} from "../rows/subscription-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The subscription and outbox operations of the PostgreSQL store. */
export type PgSubscriptionOps = PgOps<
  | "createSubscription"
  | "getSubscription"
  | "getSubscriptionCount"
  | "updateSubscription"
  | "deleteSubscription"
  | "listSubscriptions"
  | "findDueDelivery"
  | "claimDeliveries"
  | "finishDelivery"
  | "getOutboxDepth"
>;

// Subscriptions and deliveries change no access answer: no replica's access cache is told.
const quiet = { notify: false } as const;

/** Create the subscription operations on a migrated database. */
export function createPgSubscriptionOps(db: PgDb): PgSubscriptionOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<SubscriptionRow>("SELECT * FROM webhook_subscriptions WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `subscription ${JSON.stringify(uid)}`);
    return row;
  };
  const records = async (sql: Sql, rows: SubscriptionRow[]) => {
    if (rows.length === 0) return [];
    const counts = await sql.rows<{ uid: string; n: string }>(
      `SELECT subscription_uid AS uid, count(*) AS n FROM webhook_deliveries
       WHERE subscription_uid = ANY($1::text[]) GROUP BY subscription_uid`,
      [rows.map((r) => r.uid)],
    );
    const byUid = new Map(counts.map((c) => [c.uid, Number(c.n)]));
    return rows.map((r) => subscriptionRecordOf(r, byUid.get(r.uid) ?? 0));
  };
  const checkName = async (sql: Sql, groupUid: string, name: string, self: string) => {
    if (
      await sql.one(
        "SELECT 1 FROM webhook_subscriptions WHERE group_uid = $1 AND name = $2 AND uid <> $3",
        [groupUid, name, self],
      )
    ) {
      throw new StoreError(
        "already_exists",
        `a subscription of the group is named ${JSON.stringify(name)}`,
      );
    }
  };
  const lists = createPgListSql<SubscriptionRow>(db, subscriptionListColumns);

  return {
    createSubscription: (s) =>
      db.write(async (sql) => {
        if (parentOf(s.uid) !== s.groupUid) {
          throw new Error(`subscription uid ${s.uid} is not a direct child of ${s.groupUid}`);
        }
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [s.groupUid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(s.groupUid)}`);
        }
        if (await find(sql, s.uid)) {
          throw new StoreError("already_exists", `subscription ${JSON.stringify(s.uid)}`);
        }
        await checkName(sql, s.groupUid, s.name, s.uid);
        const row = await sql.one<SubscriptionRow>(
          `INSERT INTO webhook_subscriptions (uid, group_uid, org_uid, name, description, sink,
             event_types, secret, create_time, update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING *`,
          [
            s.uid,
            s.groupUid,
            rootOf(s.groupUid),
            s.name,
            s.description,
            s.sink,
            JSON.stringify(s.eventTypes),
            s.secret,
            s.now,
          ],
        );
        return (await records(sql, [row!]))[0]!;
      }, quiet),

    getSubscriptionCount: async (orgUid) => {
      const row = await db.sql.one<{ n: string }>(
        "SELECT count(*) AS n FROM webhook_subscriptions WHERE org_uid = $1",
        [orgUid],
      );
      return Number(row?.n ?? 0);
    },

    getSubscription: async (uid) => {
      const row = await find(db.sql, uid);
      return row && (await records(db.sql, [row]))[0];
    },

    updateSubscription: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await mustFind(sql, uid);
        if (isEmptyPatch(patch)) return (await records(sql, [row]))[0]!;
        const name = patch.name ?? row.name;
        if (name !== row.name) await checkName(sql, row.group_uid, name, uid);
        const updated = await sql.one<SubscriptionRow>(
          `UPDATE webhook_subscriptions SET name = $1, description = $2, sink = $3,
             event_types = $4, update_time = $5
           WHERE uid = $6 RETURNING *`,
          [
            name,
            patch.description ?? row.description,
            patch.sink ?? row.sink,
            patch.eventTypes ? JSON.stringify(patch.eventTypes) : row.event_types,
            now,
            uid,
          ],
        );
        return (await records(sql, [updated!]))[0]!;
      }, quiet),

    deleteSubscription: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        await sql.run("DELETE FROM webhook_subscriptions WHERE uid = $1", [uid]);
      }, quiet),

    listSubscriptions: async (query) => {
      const page = await lists.list(query);
      return {
        items: await records(db.sql, page.rows),
        total: page.total,
        hasMore: page.hasMore,
      };
    },

    findDueDelivery: async (now) =>
      (
        await db.sql.one<{ id: string }>(
          `SELECT id FROM webhook_deliveries WHERE next_attempt_time <= $1 AND lease_until <= $1
           LIMIT 1`,
          [now],
        )
      )?.id,

    // READ COMMITTED with SKIP LOCKED: replicas polling at once each take other rows, and
    // none waits for another's claim; the lease keeps a claimed row from the next poll.
    claimDeliveries: (c) =>
      db.plain(async (sql) => {
        const ids = await sql.rows<{ id: string }>(
          `WITH due AS (
             SELECT id FROM webhook_deliveries
             WHERE next_attempt_time <= $1 AND lease_until <= $1
             ORDER BY next_attempt_time LIMIT $2
             FOR UPDATE SKIP LOCKED
           )
           UPDATE webhook_deliveries d SET lease = $3, lease_until = $4
           FROM due WHERE d.id = due.id RETURNING d.id`,
          [c.now, c.limit, c.lease, c.leaseUntil],
        );
        if (ids.length === 0) return [];
        const rows = await sql.rows<ClaimedRow>(
          `SELECT d.id, d.subscription_uid, d.attempts, s.sink, s.secret, e.id AS event_id,
             e.type, e.source, e.subject, e.time, e.data
           FROM webhook_deliveries d
           JOIN webhook_subscriptions s ON s.uid = d.subscription_uid
           LEFT JOIN events e ON e.id = d.event_id
           WHERE d.id = ANY($1::text[])
           ORDER BY d.next_attempt_time`,
          [ids.map((r) => r.id)],
        );
        return rows.map(claimedOf);
      }),

    finishDelivery: (o) =>
      db.plain(async (sql) => {
        const mine =
          o.delivered || o.retryAt === undefined
            ? await sql.run("DELETE FROM webhook_deliveries WHERE id = $1 AND lease = $2", [
                o.id,
                o.lease,
              ])
            : await sql.run(
                `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_time = $1,
                   lease = '', lease_until = 0 WHERE id = $2 AND lease = $3`,
                [o.retryAt, o.id, o.lease],
              );
        // The lease ran out and another claim took the delivery: its outcome is the one kept.
        if (mine === 0) return;
        if (o.delivered) {
          await sql.run(
            `UPDATE webhook_subscriptions SET delivered_count = delivered_count + 1,
               last_attempt_time = $1, last_success_time = $1, last_status = $2, last_error = ''
             WHERE uid = $3`,
            [o.now, o.status, o.subscriptionUid],
          );
        } else {
          await sql.run(
            `UPDATE webhook_subscriptions SET failed_attempts = failed_attempts + 1,
               abandoned_count = abandoned_count + $1, last_attempt_time = $2, last_status = $3,
               last_error = $4 WHERE uid = $5`,
            [o.retryAt === undefined ? 1 : 0, o.now, o.status, o.error, o.subscriptionUid],
          );
        }
      }),

    getOutboxDepth: async () => {
      const row = await db.sql.one<{ n: string }>("SELECT count(*) AS n FROM webhook_deliveries");
      return Number(row?.n ?? 0);
    },
  };
}

/** Write a delivery of `event` to each subscription it matches, on `sql` (its transaction). */
export async function fanOutPg(
  sql: Sql,
  event: { id: string; subject: string; type: string; time: number },
): Promise<void> {
  const rows = await sql.rows<{ uid: string; group_uid: string; event_types: string }>(
    "SELECT uid, group_uid, event_types FROM webhook_subscriptions WHERE org_uid = $1",
    [rootOf(event.subject)],
  );
  for (const uid of matchingSubscriptions(rows, event)) {
    await sql.run(
      `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
       VALUES ($1, $2, $3, $4)`,
      [randomUUID(), uid, event.id, event.time],
    );
  }
}
