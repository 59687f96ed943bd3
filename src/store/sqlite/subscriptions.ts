import { randomUUID } from "node:crypto";
import type { Database } from "better-sqlite3";
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
import type { DeliveryOutcome, NewSubscription, SubscriptionPatch } from "../subscription-store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The subscription and outbox operations of the SQLite store. */
export type SubscriptionOps = SyncOps<
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

/** Create the subscription operations on an open, migrated database. */
export function createSubscriptionOps(db: Database): SubscriptionOps {
  const get = db.prepare("SELECT * FROM webhook_subscriptions WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const sibling = db.prepare(
    "SELECT 1 FROM webhook_subscriptions WHERE group_uid = ? AND name = ? AND uid <> ? LIMIT 1",
  );
  const insert = db.prepare(
    `INSERT INTO webhook_subscriptions (uid, group_uid, org_uid, name, description, sink,
       event_types, secret, create_time, update_time)
     VALUES (@uid, @groupUid, @orgUid, @name, @description, @sink, @eventTypes, @secret, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE webhook_subscriptions SET name = ?, description = ?, sink = ?, event_types = ?,
       update_time = ? WHERE uid = ?`,
  );
  const remove = db.prepare("DELETE FROM webhook_subscriptions WHERE uid = ?");
  const pendingOf = db
    .prepare(
      `SELECT subscription_uid AS uid, count(*) AS n FROM webhook_deliveries
       WHERE subscription_uid IN (SELECT value FROM json_each(?)) GROUP BY subscription_uid`,
    )
    .raw();
  const lists = createListSql<SubscriptionRow>(db, subscriptionListColumns);
  const due = db
    .prepare(
      `SELECT id FROM webhook_deliveries WHERE next_attempt_time <= ? AND lease_until <= ?
       ORDER BY next_attempt_time LIMIT ?`,
    )
    .pluck();
  const firstDue = db
    .prepare(
      "SELECT id FROM webhook_deliveries WHERE next_attempt_time <= ? AND lease_until <= ? LIMIT 1",
    )
    .pluck();
  const lease = db.prepare("UPDATE webhook_deliveries SET lease = ?, lease_until = ? WHERE id = ?");
  const claimed = db.prepare(
    `SELECT d.id, d.subscription_uid, d.attempts, s.sink, s.secret, e.id AS event_id, e.type,
       e.source, e.subject, e.time, e.data
     FROM webhook_deliveries d
     JOIN webhook_subscriptions s ON s.uid = d.subscription_uid
     LEFT JOIN events e ON e.id = d.event_id
     WHERE d.id = ?`,
  );
  const dropDelivery = db.prepare("DELETE FROM webhook_deliveries WHERE id = ? AND lease = ?");
  const retry = db.prepare(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_time = ?, lease = '',
       lease_until = 0 WHERE id = ? AND lease = ?`,
  );
  const succeeded = db.prepare(
    `UPDATE webhook_subscriptions SET delivered_count = delivered_count + 1,
       last_attempt_time = ?, last_success_time = ?, last_status = ?, last_error = ''
     WHERE uid = ?`,
  );
  const failed = db.prepare(
    `UPDATE webhook_subscriptions SET failed_attempts = failed_attempts + 1,
       abandoned_count = abandoned_count + ?, last_attempt_time = ?, last_status = ?,
       last_error = ? WHERE uid = ?`,
  );
  const depth = db.prepare("SELECT count(*) FROM webhook_deliveries").pluck();
  const ofOrg = db.prepare("SELECT count(*) FROM webhook_subscriptions WHERE org_uid = ?").pluck();

  const find = (uid: string) => get.get(uid) as SubscriptionRow | undefined;
  const records = (rows: SubscriptionRow[]) => {
    const counts = new Map(
      (pendingOf.all(JSON.stringify(rows.map((r) => r.uid))) as [string, number][]).map(
        ([uid, n]) => [uid, n],
      ),
    );
    return rows.map((r) => subscriptionRecordOf(r, counts.get(r.uid) ?? 0));
  };
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `subscription ${JSON.stringify(uid)}`);
    return row;
  };
  const checkName = (groupUid: string, name: string, self: string) => {
    if (sibling.get(groupUid, name, self)) {
      throw new StoreError(
        "already_exists",
        `a subscription of the group is named ${JSON.stringify(name)}`,
      );
    }
  };

  return {
    createSubscription: db.transaction((s: NewSubscription) => {
      if (parentOf(s.uid) !== s.groupUid) {
        throw new Error(`subscription uid ${s.uid} is not a direct child of ${s.groupUid}`);
      }
      if (!groupExists.get(s.groupUid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(s.groupUid)}`);
      }
      if (find(s.uid)) {
        throw new StoreError("already_exists", `subscription ${JSON.stringify(s.uid)}`);
      }
      checkName(s.groupUid, s.name, s.uid);
      insert.run({
        ...s,
        orgUid: rootOf(s.groupUid),
        eventTypes: JSON.stringify(s.eventTypes),
      });
      return records([find(s.uid)!])[0]!;
    }).immediate,

    getSubscriptionCount: (orgUid) => ofOrg.get(orgUid) as number,

    getSubscription: (uid) => {
      const row = find(uid);
      return row && records([row])[0];
    },

    updateSubscription: db.transaction((uid: string, patch: SubscriptionPatch, now: number) => {
      const row = mustFind(uid);
      if (isEmptyPatch(patch)) return records([row])[0]!;
      const name = patch.name ?? row.name;
      if (name !== row.name) checkName(row.group_uid, name, uid);
      update.run(
        name,
        patch.description ?? row.description,
        patch.sink ?? row.sink,
        patch.eventTypes ? JSON.stringify(patch.eventTypes) : row.event_types,
        now,
        uid,
      );
      return records([find(uid)!])[0]!;
    }).immediate,

    deleteSubscription: db.transaction((uid: string) => {
      mustFind(uid);
      remove.run(uid);
    }).immediate,

    listSubscriptions: (query) => {
      const page = lists.list(query);
      return { items: records(page.rows), total: page.total, hasMore: page.hasMore };
    },

    findDueDelivery: (now) => firstDue.get(now, now) as string | undefined,

    // One writer at a time on SQLite: the select and the lease are one transaction.
    claimDeliveries: db.transaction(
      (c: { now: number; limit: number; lease: string; leaseUntil: number }) => {
        const ids = due.all(c.now, c.now, c.limit) as string[];
        const out = [];
        for (const id of ids) {
          lease.run(c.lease, c.leaseUntil, id);
          out.push(claimedOf(claimed.get(id) as ClaimedRow));
        }
        return out;
      },
    ).immediate,

    finishDelivery: db.transaction((o: DeliveryOutcome) => {
      const mine =
        o.delivered || o.retryAt === undefined
          ? dropDelivery.run(o.id, o.lease).changes
          : retry.run(o.retryAt, o.id, o.lease).changes;
      // The lease ran out and another claim took the delivery: its outcome is the one kept.
      if (mine === 0) return;
      if (o.delivered) succeeded.run(o.now, o.now, o.status, o.subscriptionUid);
      else {
        const abandoned = o.retryAt === undefined ? 1 : 0;
        failed.run(abandoned, o.now, o.status, o.error, o.subscriptionUid);
      }
    }).immediate,

    getOutboxDepth: () => depth.get() as number,
  };
}

/** The fan-out of the SQLite store: an event's deliveries, in the event's transaction. */
export interface SqliteFanOut {
  /** Write a delivery of the event to each subscription it matches. */
  deliver(event: { id: string; subject: string; type: string; time: number }): void;
}

/** Create the fan-out on an open, migrated database. */
export function createSqliteFanOut(db: Database): SqliteFanOut {
  const ofOrg = db.prepare(
    "SELECT uid, group_uid, event_types FROM webhook_subscriptions WHERE org_uid = ?",
  );
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
     VALUES (?, ?, ?, ?)`,
  );
  return {
    deliver(event) {
      const rows = ofOrg.all(rootOf(event.subject)) as {
        uid: string;
        group_uid: string;
        event_types: string;
      }[];
      if (rows.length === 0) return;
      for (const uid of matchingSubscriptions(rows, event)) {
        insert.run(randomUUID(), uid, event.id, event.time);
      }
    },
  };
}
