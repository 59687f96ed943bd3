import { randomUUID } from "node:crypto";
import { parentOf, rootOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { insertRow, updateStored } from "../rows/resource.js";
import {
  type ClaimedRow,
  claimedOf,
  matchingSubscriptions,
  type SubscriptionRow,
  subscriptionRecordOf,
  subscriptions,
  subscriptionsWithPending,
} from "../rows/subscription-rows.js";
import { StoreError } from "../store.js";
import type {
  DeliveryClaim,
  DeliveryOutcome,
  DueQuery,
  NewSubscription,
  SubscriptionPatch,
} from "../subscription-store.js";
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

// The deliveries a claim takes, fairly (docs/events.md "Fair delivery"), in work bounded by
// the subscriptions with deliveries waiting, never by how many wait: `subs` walks the
// distinct subscriptions of the outbox down its index (a skip scan: one probe each), and
// `cand` takes each one's oldest due deliveries, at most its cap, down the same index (on
// PostgreSQL a LATERAL join; SQLite, which has none, looks them up by id IN a correlated
// subquery). `busy` is what is in flight on every server (a lease not run out), counted per
// subscription and organization. `due` keeps the candidates of subscriptions not paused by
// their breaker, at most their cap less what they have in flight (one, a probe, when
// half-open); `ranked` then ranks each organization's rows by how busy their subscription
// would be, so its subscriptions take turns; the claim takes the rows that keep every
// organization under its cap, the least busy first: round-robin across organizations and
// their subscriptions, never oldest first overall. Parameters, in order: now, now, now,
// perSubscription, probeAfter, perSubscription, now, perOrganization, limit.
const fairPick = (candidates: string) => `RECURSIVE subs(uid) AS (
      SELECT min(subscription_uid) FROM webhook_deliveries
      UNION ALL
      SELECT (SELECT min(d.subscription_uid) FROM webhook_deliveries d WHERE d.subscription_uid > subs.uid)
      FROM subs WHERE subs.uid IS NOT NULL
    ),
    busy AS MATERIALIZED (
      SELECT d.subscription_uid, s.org_uid
      FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.uid = d.subscription_uid
      WHERE d.lease_until > ?
    ),
    sub_busy AS (SELECT subscription_uid, count(*) AS n FROM busy GROUP BY subscription_uid),
    org_busy AS (SELECT org_uid, count(*) AS n FROM busy GROUP BY org_uid),
    cand AS (${candidates}),
    due AS (
      SELECT c.id, c.subscription_uid, s.org_uid, c.next_attempt_time,
        CASE WHEN s.consecutive_failures >= ? THEN 1 ELSE ? END AS cap,
        row_number() OVER (
          PARTITION BY c.subscription_uid ORDER BY c.next_attempt_time, c.id
        ) AS sub_rank
      FROM cand c JOIN webhook_subscriptions s ON s.uid = c.subscription_uid
      WHERE s.paused_until <= ?
    ),
    open AS (
      SELECT due.id, due.org_uid, due.next_attempt_time,
        due.sub_rank + coalesce(sb.n, 0) AS sub_load
      FROM due LEFT JOIN sub_busy sb ON sb.subscription_uid = due.subscription_uid
      WHERE due.sub_rank + coalesce(sb.n, 0) <= due.cap
    ),
    ranked AS (
      SELECT o.id, o.next_attempt_time, o.sub_load,
        coalesce(ob.n, 0) + row_number() OVER (
          PARTITION BY o.org_uid ORDER BY o.sub_load, o.next_attempt_time, o.id
        ) AS org_load
      FROM open o LEFT JOIN org_busy ob ON ob.org_uid = o.org_uid
    ),
    pick AS (
      SELECT id FROM ranked WHERE org_load <= ?
      ORDER BY org_load, sub_load, next_attempt_time, id LIMIT ?
    )`;

// A subscription's oldest due deliveries (`columns` of them), down its (subscription_uid,
// next_attempt_time) index, stopping at the cap: the parameters now, now, perSubscription.
const oldestDue = (columns: string) => `SELECT ${columns} FROM webhook_deliveries x
        WHERE x.subscription_uid = subs.uid AND x.next_attempt_time <= ?
          AND x.lease_until <= ?
        ORDER BY x.next_attempt_time LIMIT ?`;

// The candidates of each dialect (fairPick's `cand`).
const candidates = {
  sqlite: `SELECT d.id, d.subscription_uid, d.next_attempt_time FROM subs
      JOIN webhook_deliveries d ON d.id IN (${oldestDue("x.id")})`,
  pg: `SELECT d.id, d.subscription_uid, d.next_attempt_time FROM subs
      CROSS JOIN LATERAL (${oldestDue("x.id, x.subscription_uid, x.next_attempt_time")}) d`,
};

// What a claim would take, read only: fairPick's parameters with a limit of 1.
const findClaimable = {
  sqlite: `WITH ${fairPick(candidates.sqlite)} SELECT id FROM pick`,
  pg: `WITH ${fairPick(candidates.pg)} SELECT id FROM pick`,
};

// The claim itself: the picked rows leased and their attempt counted, in one statement. The
// parameters after fairPick's: lease, leaseUntil, now.
const claimDue = {
  sqlite: `WITH ${fairPick(candidates.sqlite)}
    UPDATE webhook_deliveries SET lease = ?, lease_until = ?, attempts = attempts + 1
    WHERE id IN (SELECT id FROM pick) AND lease_until <= ? RETURNING id`,
  // A row another claim leased meanwhile is read again before it is updated (READ COMMITTED)
  // and left alone: no delivery is claimed twice.
  pg: `WITH ${fairPick(candidates.pg)}
    UPDATE webhook_deliveries d SET lease = ?, lease_until = ?, attempts = d.attempts + 1
    FROM pick WHERE d.id = pick.id AND d.lease_until <= ? RETURNING d.id`,
};

// fairPick's parameters, in its order.
const pickParams = (q: DueQuery, limit: number) => [
  q.now,
  q.now,
  q.now,
  q.perSubscription,
  q.probeAfter,
  q.perSubscription,
  q.now,
  q.perOrganization,
  limit,
];

// PostgreSQL's replicas claim one at a time: each claim then counts the leases of the one
// before it, so the caps hold across replicas (a claim is a few milliseconds). SQLite's one
// writer already does.
const claimLock = {
  sqlite: "SELECT 1",
  pg: "SELECT pg_advisory_xact_lock(hashtextextended(':webhook-claims', 0))",
};

const claimedRows = (idsIn: string) =>
  `SELECT d.id, d.subscription_uid, d.attempts, s.consecutive_failures, s.sink, s.secret,
     e.id AS event_id, e.type,
     e.source, e.subject, e.time, e.data
   FROM webhook_deliveries d
   JOIN webhook_subscriptions s ON s.uid = d.subscription_uid
   LEFT JOIN events e ON e.uid = d.event_uid
   WHERE ${idsIn}
   ORDER BY d.next_attempt_time`;

/**
 * Write a delivery of `event` to each subscription it matches, in the event's transaction (the
 * outbox): appendEvent's last step (ops/events.ts).
 */
export function* fanOut(event: {
  id: string;
  /** The event's uid (subject/id): the claim reads the event through it (claimedRows). */
  uid: string;
  subject: string;
  type: string;
  time: number;
}): Steps<void> {
  const subscriptions = yield* rows<{
    uid: string;
    group_uid: string;
    event_types: string;
    paused_until: number | string;
  }>(
    "SELECT uid, group_uid, event_types, paused_until FROM webhook_subscriptions WHERE org_uid = ?",
    rootOf(event.subject),
  );
  const pausedUntil = new Map(subscriptions.map((s) => [s.uid, Number(s.paused_until)]));
  for (const uid of matchingSubscriptions(subscriptions, event)) {
    yield* run(
      `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, event_uid, next_attempt_time)
       VALUES (?, ?, ?, ?, ?)`,
      randomUUID(),
      uid,
      event.id,
      event.uid,
      // A paused subscription's delivery is due when the pause ends: the claim never reads it
      // before (the due index), however many pile up behind a dead sink.
      Math.max(event.time, pausedUntil.get(uid) ?? 0),
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
      const row = yield* insertRow(subscriptions, {
        uid: s.uid,
        group_uid: s.groupUid,
        org_uid: rootOf(s.groupUid),
        name: s.name,
        description: s.description,
        sink: s.sink,
        event_types: JSON.stringify(s.eventTypes),
        secret: s.secret,
        create_time: s.now,
        update_time: s.now,
      });
      // A new subscription has no delivery yet (the table's row has no count of them).
      return subscriptionRecordOf({ ...row, pending: 0 });
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
      const updated = yield* updateStored(subscriptions, uid, {
        name,
        description: patch.description ?? row.description,
        sink: patch.sink ?? row.sink,
        event_types: patch.eventTypes ? JSON.stringify(patch.eventTypes) : row.event_types,
        update_time: now,
      });
      return subscriptionRecordOf(updated);
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

  listSubscriptions: list(subscriptions.listColumns, subscriptionRecordOf),

  findDueDelivery: read(function* (q: DueQuery) {
    const row = yield* one<{ id: string }>(findClaimable, ...pickParams(q, 1));
    return row?.id;
  }),

  // READ COMMITTED on PostgreSQL (`readCommitted`): the lock and the lease keep replicas
  // apart, where SERIALIZABLE would only fail concurrent claims and retry them.
  claimDeliveries: write(
    function* (c: DeliveryClaim) {
      yield* run(claimLock);
      const ids = yield* rows<{ id: string }>(
        claimDue,
        ...pickParams(c, c.limit),
        c.lease,
        c.leaseUntil,
        c.now,
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
      // The attempt was counted when claimed.
      const retryAt = o.retryAt === undefined ? undefined : Math.max(o.retryAt, o.pauseUntil ?? 0);
      const mine =
        o.delivered || retryAt === undefined
          ? yield* run("DELETE FROM webhook_deliveries WHERE id = ? AND lease = ?", o.id, o.lease)
          : yield* run(
              `UPDATE webhook_deliveries SET next_attempt_time = ?, lease = '', lease_until = 0
               WHERE id = ? AND lease = ?`,
              retryAt,
              o.id,
              o.lease,
            );
      // The lease ran out and another claim took the delivery: its outcome is the one kept.
      if (mine === 0) return;
      if (o.delivered) {
        yield* run(
          `UPDATE webhook_subscriptions SET delivered_count = delivered_count + 1,
             last_attempt_time = ?, last_success_time = ?, last_status = ?, last_error = '',
             consecutive_failures = 0, paused_until = 0
           WHERE uid = ?`,
          o.now,
          o.now,
          o.status,
          o.subscriptionUid,
        );
        return;
      }
      yield* run(
        `UPDATE webhook_subscriptions SET failed_attempts = failed_attempts + 1,
           abandoned_count = abandoned_count + ?, last_attempt_time = ?, last_status = ?,
           last_error = ?, consecutive_failures = consecutive_failures + 1,
           paused_until = CASE WHEN ? > paused_until THEN ? ELSE paused_until END
         WHERE uid = ?`,
        o.retryAt === undefined ? 1 : 0,
        o.now,
        o.status,
        o.error,
        // A pause only ever grows here (an attempt in flight when another opened the breaker
        // must not close it by failing); a success ends it.
        o.pauseUntil ?? 0,
        o.pauseUntil ?? 0,
        o.subscriptionUid,
      );
      if (o.pauseUntil !== undefined) {
        // The breaker opens: what is due of the subscription waits for the pause to end, out
        // of every claim's way (the claim reads the due rows by time).
        yield* run(
          `UPDATE webhook_deliveries SET next_attempt_time = ?
           WHERE subscription_uid = ? AND next_attempt_time < ? AND lease_until <= ?`,
          o.pauseUntil,
          o.subscriptionUid,
          o.pauseUntil,
          o.now,
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
