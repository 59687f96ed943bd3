import { isAtOrBelow } from "../../uid.js";
import type { ListColumns } from "../list-clauses.js";
import type { ClaimedDelivery, SubscriptionRecord } from "../subscription-store.js";

/** A webhook_subscriptions row as both backends read it (event types as JSON). */
export interface SubscriptionRow {
  uid: string;
  group_uid: string;
  org_uid: string;
  name: string;
  description: string;
  sink: string;
  event_types: string;
  secret: string;
  create_time: number | string;
  update_time: number | string;
  delivered_count: number | string;
  failed_attempts: number | string;
  abandoned_count: number | string;
  last_attempt_time: number | string;
  last_success_time: number | string;
  last_status: number;
  last_error: string;
  consecutive_failures: number | string;
  paused_until: number | string;
  /** Its deliveries pending (subscriptionsWithPending), a count: text on PostgreSQL. */
  pending: number | string;
}

/**
 * The subscriptions with the count of their pending deliveries: a view of both schemas
 * (subscription-schema.ts), read (and listed by the list engines) as the table would be; the
 * planners of both inline it, so the table's indexes serve the filters and the order.
 */
export const subscriptionsWithPending = "webhook_subscriptions_with_pending";

/** Where the list SQL of either backend finds the columns of subscriptions. */
export const subscriptionListColumns: ListColumns = {
  table: subscriptionsWithPending,
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};

/** The record of a row (PostgreSQL returns BIGINT as text); the secret stays behind. */
export function subscriptionRecordOf(r: SubscriptionRow): SubscriptionRecord {
  return {
    uid: r.uid,
    groupUid: r.group_uid,
    name: r.name,
    description: r.description,
    sink: r.sink,
    eventTypes: JSON.parse(r.event_types) as string[],
    delivery: {
      pendingCount: Number(r.pending),
      deliveredCount: Number(r.delivered_count),
      failedAttempts: Number(r.failed_attempts),
      abandonedCount: Number(r.abandoned_count),
      lastAttemptTime: Number(r.last_attempt_time),
      lastSuccessTime: Number(r.last_success_time),
      lastStatus: r.last_status,
      lastError: r.last_error,
      consecutiveFailures: Number(r.consecutive_failures),
      pausedUntil: Number(r.paused_until),
    },
    createTime: Number(r.create_time),
    updateTime: Number(r.update_time),
  };
}

/**
 * The subscriptions an event goes to, among its organization's: those of the subject's group
 * or a group above it (a subscription sees its group's subtree) that name the event's type.
 */
export function matchingSubscriptions(
  rows: readonly { uid: string; group_uid: string; event_types: string }[],
  event: { subject: string; type: string },
): string[] {
  return rows
    .filter(
      (s) =>
        isAtOrBelow(event.subject, s.group_uid) &&
        (JSON.parse(s.event_types) as string[]).includes(event.type),
    )
    .map((s) => s.uid);
}

/** A claimed delivery joined with its subscription and event, as both backends read it. */
export interface ClaimedRow {
  id: string;
  subscription_uid: string;
  attempts: number;
  consecutive_failures: number | string;
  sink: string;
  secret: string;
  event_id: string | null;
  type: string | null;
  source: string | null;
  subject: string | null;
  time: number | string | null;
  data: string | null;
}

/** The claimed delivery of a row; the event is gone when retention pruned it meanwhile. */
export function claimedOf(r: ClaimedRow): ClaimedDelivery {
  return {
    id: r.id,
    subscriptionUid: r.subscription_uid,
    sink: r.sink,
    secret: r.secret,
    attempt: Number(r.attempts),
    consecutiveFailures: Number(r.consecutive_failures),
    ...(r.type === null
      ? {}
      : {
          event: {
            id: r.event_id!,
            type: r.type,
            source: r.source!,
            subject: r.subject!,
            time: Number(r.time),
            data: r.data!,
          },
        }),
  };
}
