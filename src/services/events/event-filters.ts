import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Event, EventSchema } from "../../../gen/gatehouse/events/v2beta1/events_pb.js";
import type { EventFilters, EventRecord } from "../../store/event-store.js";
import type { Violations } from "../../validation/field-rules.js";

/** The most types and families one list may ask for. */
const maxTypes = 32;

/**
 * The store filters of a ListEvents or ExportEvents request's `type` and `actor` (its time
 * range is each RPC's own), bad values added to `v`.
 */
export function eventFiltersOf(v: Violations, req: { type: string; actor: string }): EventFilters {
  const filters: EventFilters = {};
  if (req.type !== "") filters.types = typesOf(v, req.type);
  if (req.actor !== "") filters.actorUid = req.actor;
  return filters;
}

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
