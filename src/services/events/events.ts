import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Event,
  EventSchema,
  type EventsService,
  ListEventsResponseSchema,
} from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import type { ListEngine } from "../../list/list.js";
import type { EventFilters, EventRecord } from "../../store/event-store.js";
import type { SortField, Store } from "../../store/store.js";
import { type Violations, violations } from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { createSubscriptionRpcs, type SubscriptionsDeps } from "./subscriptions.js";

/** What the events service needs. */
export interface EventsDeps extends SubscriptionsDeps {
  store: Store;
  lists: ListEngine;
}

/**
 * Create the EventsService: the audit trail the store writes with every change. What the
 * caller sees is limited to the organizations where it holds events.list (the access
 * interceptor's list scope). Its webhook subscriptions are in subscriptions.ts.
 */
export function createEventsService(deps: EventsDeps): ServiceImpl<typeof EventsService> {
  const { store, lists } = deps;
  return {
    ...createSubscriptionRpcs(deps),
    async listEvents(req, ctx) {
      const v = violations();
      const filters: EventFilters = {};
      if (req.type !== "") filters.types = typesOf(v, req.type);
      if (req.actor !== "") filters.actorUid = req.actor;
      if (req.startTime) filters.since = timestampMs(req.startTime);
      if (req.endTime) filters.before = timestampMs(req.endTime);
      if (req.startTime && req.endTime && filters.before! <= filters.since!) {
        v.add("end_time", "must be after start_time");
      }
      v.throwIfAny();
      const query = lists.parse(req, filters, listOptionsOf(ctx));
      const { items, ...envelope } = lists.finish(
        query,
        await store.listEvents(query),
        eventSortValue,
      );
      return create(ListEventsResponseSchema, { events: items.map(toEvent), ...envelope });
    },
  };
}

/** The most types and families one list may ask for. */
const maxTypes = 32;

/**
 * The types a `type` filter names: comma-separated exact types (`dev.gatehouse.…`) or
 * families, whole words of a type (`role_binding`, `auth.person`, `iam.role_binding.created`).
 */
function typesOf(v: Violations, text: string): string[] {
  const types = text.split(",").map((t) => t.trim());
  const bad = types.find((t) => !/^[a-z0-9_]+(\.[a-z0-9_]+)*$/.test(t) || t.length > 256);
  if (bad !== undefined) {
    v.add(
      "type",
      `${JSON.stringify(bad.slice(0, 256))} is neither an event type (dev.gatehouse.<domain>.<resource>.<verb>.v<n>) nor a family of them (role_binding, auth.person, iam)`,
    );
  } else if (types.length > maxTypes) v.add("type", `must name at most ${maxTypes} types`);
  return types;
}

/** The CloudEvent of a stored event. */
export function toEvent(r: EventRecord): Event {
  return create(EventSchema, {
    uid: r.uid,
    specversion: "1.0",
    id: r.id,
    type: r.type,
    source: r.source,
    subject: r.subject,
    time: timestampFromMs(r.time),
    datacontenttype: "application/json",
    data: JSON.parse(r.data) as JsonObject,
  });
}

function eventSortValue(e: EventRecord, field: SortField): string | number {
  if (field === "name") return e.type;
  if (field === "uid") return e.uid;
  return e.time;
}
