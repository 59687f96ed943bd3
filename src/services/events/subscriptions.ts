import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeliveryStateSchema,
  type EventsService,
  ListSubscriptionsResponseSchema,
  type Subscription,
  SubscriptionSchema,
} from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import { storeOf } from "../../call-store.js";
import type { Config } from "../../config.js";
import { failedPrecondition } from "../../errors.js";
import { currentEventType } from "../../events/legacy-types.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import { subscriptions } from "../../store/rows/subscription-rows.js";
import type { Store } from "../../store/store.js";
import type { SubscriptionPatch, SubscriptionRecord } from "../../store/subscription-store.js";
import { newChildUid, rootOf } from "../../uid.js";
import {
  checkDescription,
  checkDisplayName,
  checkUid,
  labelsPatch,
  type Violations,
  violations,
} from "../../validation/field-rules.js";
import { newSubscriptionSecret } from "../../webhooks/signature.js";
import { type SinkRules, sinkProblem } from "../../webhooks/sink-rules.js";
import { listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of subscriptions may be ordered by: its message's scalars that a column keeps. */
const subscriptionsSorts = sortFieldsOf(SubscriptionSchema, subscriptions.listColumns);

/** What the subscription RPCs need. */
export interface SubscriptionsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  config: Pick<Config, "webhookAllowHttpLoopback" | "webhookAllowPrivateAddresses">;
}

/**
 * The most subscriptions one organization may have, in all its groups: every event of the
 * organization is matched against them, in the transaction of its change.
 */
export const maxSubscriptionsPerOrganization = 100;

/** The most event types one subscription may name. */
export const maxEventTypes = 64;
// The shape of Gatehouse's event types: dev.gatehouse.<domain>.<resource>.<verb>.v<n>.
const eventTypePattern = /^dev\.gatehouse(\.[a-z0-9_]+){3}\.v[0-9]+$/;

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(SubscriptionSchema);

type SubscriptionRpcs = Pick<
  ServiceImpl<typeof EventsService>,
  | "listSubscriptions"
  | "getSubscription"
  | "createSubscription"
  | "updateSubscription"
  | "deleteSubscription"
>;

/**
 * Create the subscription RPCs of the EventsService: webhook subscriptions in groups.
 * Authorization (events.subscriptions.* at the subscription's group) is the access
 * interceptor's. The secret is made here, returned by Create, and never read back.
 */
export function createSubscriptionRpcs(deps: SubscriptionsDeps): SubscriptionRpcs {
  const { store, lists, now } = deps;
  const rules: SinkRules = {
    allowLoopback: deps.config.webhookAllowHttpLoopback,
    allowPrivateAddresses: deps.config.webhookAllowPrivateAddresses,
  };
  return {
    async listSubscriptions(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: subscriptionsSorts });
      const { items, ...envelope } = lists.finish(
        query,
        await store.listSubscriptions(query),
        sortValueOf,
      );
      return create(ListSubscriptionsResponseSchema, {
        subscriptions: items.map((s) => toSubscription(s, now())),
        ...envelope,
      });
    },

    async getSubscription(req) {
      return toSubscription(
        await requireFound("subscription", req.uid, (uid) => store.getSubscription(uid)),
        now(),
      );
    },

    async createSubscription(req, ctx) {
      const store = storeOf(ctx);
      const body = req.subscription ?? create(SubscriptionSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkDisplayName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      checkSink(v, body.sink, rules);
      // A legacy type is stored as the type that records its changes now (legacy-types.ts).
      const eventTypes = body.eventTypes.map(currentEventType);
      checkEventTypes(v, eventTypes);
      v.throwIfAny();
      const secret = newSubscriptionSecret();
      const uid = newChildUid(req.parent);
      const record = await store.atomically(async (tx) => {
        // Counted in the transaction that creates: concurrent creates cannot overshoot.
        if (
          (await tx.getSubscriptionCount(rootOf(req.parent))) >= maxSubscriptionsPerOrganization
        ) {
          throw failedPrecondition(
            `the organization has ${maxSubscriptionsPerOrganization} webhook subscriptions, the most it may have: delete one first`,
          );
        }
        return tx.createSubscription({
          uid,
          groupUid: req.parent,
          name: body.name,
          description: body.description,
          sink: body.sink,
          eventTypes,
          secret,
          now: now(),
        });
      });
      // The one answer that carries the secret.
      return toSubscription(record, now(), secret);
    },

    async updateSubscription(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.subscription, req.updateMask);
      const patch: SubscriptionPatch = labelsPatch(v, fields, body, checkDisplayName);
      if (fields.has("sink")) {
        checkSink(v, body.sink, rules);
        patch.sink = body.sink;
      }
      if (fields.has("event_types")) {
        patch.eventTypes = body.eventTypes.map(currentEventType);
        checkEventTypes(v, patch.eventTypes);
      }
      v.throwIfAny();
      const at = now();
      return toSubscription(await store.updateSubscription(body.uid, patch, at), at);
    },

    async deleteSubscription(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteSubscription(req.uid);
      return {};
    },
  };
}

function checkSink(v: Violations, sink: string, rules: SinkRules): void {
  const problem = sink === "" ? "is required" : sinkProblem(sink, rules);
  if (problem) v.add("sink", problem);
}

function checkEventTypes(v: Violations, types: readonly string[]): void {
  const bad = types.find((t) => t.length > 256 || !eventTypePattern.test(t));
  if (types.length === 0) v.add("event_types", "at least one event type is required");
  else if (types.length > maxEventTypes) {
    v.add("event_types", `must be at most ${maxEventTypes} event types`);
  } else if (bad !== undefined) {
    v.add(
      "event_types",
      `${JSON.stringify(bad.slice(0, 256))} is not an event type (dev.gatehouse.<domain>.<resource>.<verb>.v<n>; exact types, no wildcards)`,
    );
  } else if (new Set(types).size !== types.length) {
    v.add("event_types", "must not name a type twice");
  }
}

/**
 * The API message of a stored subscription at `now` (a pause shows while it lasts); `secret`
 * only in Create's answer.
 */
export function toSubscription(r: SubscriptionRecord, now: number, secret = ""): Subscription {
  const d = r.delivery;
  return create(SubscriptionSchema, {
    uid: r.uid,
    name: r.name,
    description: r.description,
    sink: r.sink,
    eventTypes: r.eventTypes,
    secret,
    delivery: create(DeliveryStateSchema, {
      pendingCount: BigInt(d.pendingCount),
      deliveredCount: BigInt(d.deliveredCount),
      failedAttempts: BigInt(d.failedAttempts),
      abandonedCount: BigInt(d.abandonedCount),
      ...(d.lastAttemptTime ? { lastAttemptTime: timestampFromMs(d.lastAttemptTime) } : {}),
      ...(d.lastSuccessTime ? { lastSuccessTime: timestampFromMs(d.lastSuccessTime) } : {}),
      lastStatus: d.lastStatus,
      lastError: d.lastError,
      consecutiveFailures: BigInt(d.consecutiveFailures),
      ...(d.pausedUntil > now ? { pausedUntil: timestampFromMs(d.pausedUntil) } : {}),
    }),
    createTime: timestampFromMs(r.createTime),
    updateTime: timestampFromMs(r.updateTime),
  });
}
