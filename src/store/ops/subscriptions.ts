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
  subscriptionsWithPending,
} from "../rows/subscription-rows.js";
import { StoreError } from "../store.js";
import type { DeliveryOutcome, NewSubscription, SubscriptionPatch } from "../subscription-store.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  one,
  read,
  rows,
  run,
  type Steps,
  updateRow,
  write,
} from "./operation.js";

const selectSubscription = `SELECT * FROM ${subscriptionsWithPending} WHERE uid = ?`;

const mustFind = (uid: string) => found<SubscriptionRow>("subscription", selectSubscription, uid);

function* checkName(groupUid: string, name: string, self: string): Steps<void> {
  if (
    yield* exists(
      "SELECT 1 FROM webhook_subscriptions WHERE group_uid = ? AND name = ? AND uid <> ? LIMIT 1",
      groupUid,
      name,
      self,
    )
  ) {
    throw new StoreError(
      "already_exists",
      `a subscription of the group is named ${JSON.stringify(name)}`,
    );
  }
}

function* count(text: string, ...params: string[]): Steps<number> {
  return Number((yield* one<{ n: number | string }>(text, ...params))?.n ?? 0);
}

// The due deliveries, oldest first, leased in the same statement. PostgreSQL's replicas poll
// the one outbox at once: FOR UPDATE SKIP LOCKED lets each take other rows without waiting
// for another's claim (the lease then keeps a claimed row from the next poll); SQLite's one
// writer needs no lock clause. The parameters come in the same order in both texts.
const claimDue = {
  sqlite: `WITH due AS (
      SELECT id FROM webhook_deliveries WHERE next_attempt_time <= ? AND lease_until <= ?
      ORDER BY next_attempt_time LIMIT ?
    )
    UPDATE webhook_deliveries SET lease = ?, lease_until = ?
    WHERE id IN (SELECT id FROM due) RETURNING id`,
  pg: `WITH due AS (
      SELECT id FROM webhook_deliveries WHERE next_attempt_time <= ? AND lease_until <= ?
      ORDER BY next_attempt_time LIMIT ?
      FOR UPDATE SKIP LOCKED
    )
    UPDATE webhook_deliveries d SET lease = ?, lease_until = ?
    FROM due WHERE d.id = due.id RETURNING d.id`,
};

const claimedRows = (idsIn: string) =>
  `SELECT d.id, d.subscription_uid, d.attempts, s.sink, s.secret, e.id AS event_id, e.type,
     e.source, e.subject, e.time, e.data
   FROM webhook_deliveries d
   JOIN webhook_subscriptions s ON s.uid = d.subscription_uid
   LEFT JOIN events e ON e.id = d.event_id
   WHERE ${idsIn}
   ORDER BY d.next_attempt_time`;

/**
 * Write a delivery of `event` to each subscription it matches, in the event's transaction (the
 * outbox): appendEvent's last step (ops/events.ts).
 */
export function* fanOut(event: {
  id: string;
  subject: string;
  type: string;
  time: number;
}): Steps<void> {
  const subscriptions = yield* rows<{ uid: string; group_uid: string; event_types: string }>(
    "SELECT uid, group_uid, event_types FROM webhook_subscriptions WHERE org_uid = ?",
    rootOf(event.subject),
  );
  for (const uid of matchingSubscriptions(subscriptions, event)) {
    yield* run(
      `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
       VALUES (?, ?, ?, ?)`,
      randomUUID(),
      uid,
      event.id,
      event.time,
    );
  }
}

/**
 * The webhook subscription and outbox operations of both backends. No access answer depends
 * on a subscription or a delivery, so every write here keeps the access caches warm. The
 * delivery rows themselves are written with their event, in its transaction (fanOut above).
 */
export const subscriptionOps = {
  createSubscription: write(
    function* (s: NewSubscription) {
      if (parentOf(s.uid) !== s.groupUid) {
        throw new Error(`subscription uid ${s.uid} is not a direct child of ${s.groupUid}`);
      }
      yield* mustExist("group", s.groupUid);
      if (yield* exists("SELECT 1 FROM webhook_subscriptions WHERE uid = ?", s.uid)) {
        throw new StoreError("already_exists", `subscription ${JSON.stringify(s.uid)}`);
      }
      yield* checkName(s.groupUid, s.name, s.uid);
      const row = yield* one<Omit<SubscriptionRow, "pending">>(
        `INSERT INTO webhook_subscriptions (uid, group_uid, org_uid, name, description, sink,
           event_types, secret, create_time, update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        s.uid,
        s.groupUid,
        rootOf(s.groupUid),
        s.name,
        s.description,
        s.sink,
        JSON.stringify(s.eventTypes),
        s.secret,
        s.now,
        s.now,
      );
      // A new subscription has no delivery yet.
      return subscriptionRecordOf({ ...row!, pending: 0 });
    },
    { accessNeutral: true },
  ),

  getSubscriptionCount: read(function* (orgUid: string) {
    return yield* count(
      "SELECT count(*) AS n FROM webhook_subscriptions WHERE org_uid = ?",
      orgUid,
    );
  }),

  getSubscription: lookup(selectSubscription, subscriptionRecordOf),

  updateSubscription: write(
    function* (uid: string, patch: SubscriptionPatch, now: number) {
      const row = yield* mustFind(uid);
      if (isEmptyPatch(patch)) return subscriptionRecordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) yield* checkName(row.group_uid, name, uid);
      const updated = yield* updateRow<Omit<SubscriptionRow, "pending">>(
        { reread: "SELECT * FROM webhook_subscriptions WHERE uid = ?", key: uid },
        `UPDATE webhook_subscriptions SET name = ?, description = ?, sink = ?, event_types = ?,
           update_time = ?
         WHERE uid = ?`,
        name,
        patch.description ?? row.description,
        patch.sink ?? row.sink,
        patch.eventTypes ? JSON.stringify(patch.eventTypes) : row.event_types,
        now,
        uid,
      );
      // Its deliveries are as the read above found them, in this transaction.
      return subscriptionRecordOf({ ...updated!, pending: row.pending });
    },
    { accessNeutral: true },
  ),

  deleteSubscription: write(
    function* (uid: string) {
      yield* mustFind(uid);
      // Its pending deliveries go with it (ON DELETE CASCADE).
      yield* run("DELETE FROM webhook_subscriptions WHERE uid = ?", uid);
    },
    { accessNeutral: true },
  ),

  listSubscriptions: list(subscriptionListColumns, subscriptionRecordOf),

  findDueDelivery: read(function* (now: number) {
    const row = yield* one<{ id: string }>(
      "SELECT id FROM webhook_deliveries WHERE next_attempt_time <= ? AND lease_until <= ? LIMIT 1",
      now,
      now,
    );
    return row?.id;
  }),

  // READ COMMITTED on PostgreSQL (`readCommitted`): SKIP LOCKED and the lease keep replicas
  // apart, where SERIALIZABLE would only fail concurrent claims and retry them.
  claimDeliveries: write(
    function* (c: { now: number; limit: number; lease: string; leaseUntil: number }) {
      const ids = yield* rows<{ id: string }>(
        claimDue,
        c.now,
        c.now,
        c.limit,
        c.lease,
        c.leaseUntil,
      );
      if (ids.length === 0) return [];
      const claimed = yield* rows<ClaimedRow>(
        {
          sqlite: claimedRows("d.id IN (SELECT value FROM json_each(?))"),
          pg: claimedRows("d.id = ANY(?::text[])"),
        },
        ids.map((r) => r.id),
      );
      return claimed.map(claimedOf);
    },
    { accessNeutral: true, readCommitted: true },
  ),

  finishDelivery: write(
    function* (o: DeliveryOutcome) {
      const mine =
        o.delivered || o.retryAt === undefined
          ? yield* run("DELETE FROM webhook_deliveries WHERE id = ? AND lease = ?", o.id, o.lease)
          : yield* run(
              `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_time = ?,
                 lease = '', lease_until = 0 WHERE id = ? AND lease = ?`,
              o.retryAt,
              o.id,
              o.lease,
            );
      // The lease ran out and another claim took the delivery: its outcome is the one kept.
      if (mine === 0) return;
      if (o.delivered) {
        yield* run(
          `UPDATE webhook_subscriptions SET delivered_count = delivered_count + 1,
             last_attempt_time = ?, last_success_time = ?, last_status = ?, last_error = ''
           WHERE uid = ?`,
          o.now,
          o.now,
          o.status,
          o.subscriptionUid,
        );
      } else {
        yield* run(
          `UPDATE webhook_subscriptions SET failed_attempts = failed_attempts + 1,
             abandoned_count = abandoned_count + ?, last_attempt_time = ?, last_status = ?,
             last_error = ? WHERE uid = ?`,
          o.retryAt === undefined ? 1 : 0,
          o.now,
          o.status,
          o.error,
          o.subscriptionUid,
        );
      }
    },
    { accessNeutral: true, readCommitted: true },
  ),

  getOutboxDepth: read(function* () {
    return yield* count("SELECT count(*) AS n FROM webhook_deliveries");
  }),
} satisfies OpsOf<
  | "createSubscription"
  | "getSubscriptionCount"
  | "getSubscription"
  | "updateSubscription"
  | "deleteSubscription"
  | "listSubscriptions"
  | "findDueDelivery"
  | "claimDeliveries"
  | "finishDelivery"
  | "getOutboxDepth"
>;
