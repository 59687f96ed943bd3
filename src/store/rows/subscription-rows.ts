import { currentEventType } from "../../events/legacy-types.js";
import { isAtOrBelow } from "../../uid.js";
import type { ClaimedDelivery, SubscriptionRecord } from "../subscription-store.js";
import { declareResource } from "./resource.js";

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

const delivery = (internal?: string) =>
  // The outbox's account of the subscription's deliveries, kept by the deliverer.
  internal === undefined
    ? ({ field: "delivery", generated: true } as const)
    : ({ internal, generated: true } as const);

/**
 * A webhook subscription's storage: a child of its group, deleted with it (and its pending
 * deliveries with it, ON DELETE CASCADE). Read through the view that adds its deliveries
 * pending.
 */
export const subscriptions = declareResource<SubscriptionRow, SubscriptionRecord>({
  kind: "subscription",
  collection: "subscriptions",
  message: "gatehouse.events.v2beta1.Subscription",
  table: "webhook_subscriptions",
  view: subscriptionsWithPending,
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    org_uid: { internal: "the organization, whose events are matched against it" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    sink: { field: "sink", updated: true },
    event_types: { field: "event_types", updated: true },
    secret: { field: "secret" },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    delivered_count: delivery(),
    failed_attempts: delivery(),
    abandoned_count: delivery(),
    last_attempt_time: delivery(),
    last_success_time: delivery(),
    last_status: delivery(),
    last_error: delivery(),
    consecutive_failures: delivery(),
    paused_until: delivery(),
    pending: { field: "delivery", fromView: true },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "cascade" },
  recordOf: subscriptionRecordOf,
});

/** Where the list SQL of either backend finds the columns of subscriptions. */
export const subscriptionListColumns = subscriptions.listColumns;

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
 * or a group above it (a subscription sees its group's subtree) that name the event's type
 * (or a legacy name of it, from before one type per change).
 */
export function matchingSubscriptions(
  rows: readonly { uid: string; group_uid: string; event_types: string }[],
  event: { subject: string; type: string },
): string[] {
  return rows
    .filter(
      (s) =>
        isAtOrBelow(event.subject, s.group_uid) &&
        // A type recorded no more (legacy-types.ts) still names what it was about.
        (JSON.parse(s.event_types) as string[]).some((t) => currentEventType(t) === event.type),
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
