import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type EventsService,
  ListEventsResponseSchema,
} from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import type { ListEngine } from "../../list/list.js";
import type { EventRecord } from "../../store/event-store.js";
import type { SortField, Store } from "../../store/store.js";
import { violations } from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { eventFiltersOf, toEvent } from "./event-filters.js";
import { createExportEvents } from "./export-events.js";
import { createSubscriptionRpcs, type SubscriptionsDeps } from "./subscriptions.js";

/** What the events service needs. */
export interface EventsDeps extends SubscriptionsDeps {
  store: Store;
  lists: ListEngine;
}

/**
 * Create the EventsService: the audit trail the store writes with every change. What the
 * caller sees is limited to the organizations where it holds events.list (the access
 * interceptor's list scope). Its export is in export-events.ts, its webhook subscriptions in
 * subscriptions.ts.
 */
export function createEventsService(deps: EventsDeps): ServiceImpl<typeof EventsService> {
  const { store, lists } = deps;
  return {
    ...createSubscriptionRpcs(deps),
    exportEvents: createExportEvents(deps),
    async listEvents(req, ctx) {
      const v = violations();
      const filters = eventFiltersOf(v, req);
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

function eventSortValue(e: EventRecord, field: SortField): string | number {
  if (field === "name") return e.type;
  if (field === "uid") return e.uid;
  return e.time;
}
