import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AdvisoriesService,
  type Advisory,
  AdvisorySchema,
  type Event,
  ListAdvisoriesResponseSchema,
} from "../../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { storeOf } from "../../call-store.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type {
  AdvisoryContent,
  AdvisoryEvent,
  AdvisoryFilters,
  AdvisoryPatch,
  AdvisoryRecord,
  EventTypeNumber,
} from "../../store/advisory-store.js";
import { advisories } from "../../store/rows/advisory-rows.js";
import type { SortField, Store } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import { checkAdvisoryFields, checkQuery, isEventType } from "../../validation/advisory-rules.js";
import { checkUid, violations } from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of advisories may be ordered by: its message's scalars that a column keeps. */
const advisoriesSorts = sortFieldsOf(AdvisorySchema, advisories.listColumns);

/** What the advisories service needs. */
export interface AdvisoriesDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
}

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(AdvisorySchema);

/**
 * Create the AdvisoriesService: vulnerability advisories of a group. An advisory's `name`
 * (the List filter and sort field) is its advisoryId. Authorization (advisories.list, and the
 * advisories.create|update|delete writes of the advisories.admin role) is the access
 * interceptor's.
 */
export function createAdvisoriesService(
  deps: AdvisoriesDeps,
): ServiceImpl<typeof AdvisoriesService> {
  const { store, lists, now } = deps;
  return {
    async listAdvisories(req, ctx) {
      const v = violations();
      const filters: AdvisoryFilters = {};
      if (req.aliases !== "") filters.alias = req.aliases;
      if (req.artifactName !== "") filters.artifactName = req.artifactName;
      if (req.componentName !== "") filters.componentName = req.componentName;
      if (req.latestEventType !== 0) {
        if (!isEventType(req.latestEventType)) {
          v.add("latest_event_type", "must be a known event type");
        }
        filters.latestEventType = req.latestEventType;
      }
      if (req.query !== "") {
        checkQuery(v, "query", req.query);
        filters.query = req.query;
      }
      v.throwIfAny();
      const query = lists.parse(req, filters, { ...listOptionsOf(ctx), sort: advisoriesSorts });
      const { items, ...envelope } = lists.finish(
        query,
        await store.listAdvisories(query),
        advisorySortValue,
      );
      return create(ListAdvisoriesResponseSchema, {
        advisories: items.map(toAdvisory),
        ...envelope,
      });
    },

    async getAdvisory(req) {
      return toAdvisory(await requireFound("advisory", req.uid, (uid) => store.getAdvisory(uid)));
    },

    async createAdvisory(req, ctx) {
      const store = storeOf(ctx);
      const body = req.advisory ?? create(AdvisorySchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      const content = contentOf(body);
      checkAdvisoryFields(v, content);
      v.throwIfAny();
      const uid = newChildUid(req.parent);
      return toAdvisory(await store.createAdvisory(uid, req.parent, content, now()));
    },

    async updateAdvisory(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.advisory, req.updateMask);
      const all = contentOf(body);
      const patch: AdvisoryPatch = {};
      if (fields.has("advisory_id")) patch.advisoryId = all.advisoryId;
      if (fields.has("aliases")) patch.aliases = all.aliases;
      if (fields.has("summary")) patch.summary = all.summary;
      if (fields.has("artifact_name")) patch.artifactName = all.artifactName;
      if (fields.has("component_name")) patch.componentName = all.componentName;
      if (fields.has("component_type")) patch.componentType = all.componentType;
      if (fields.has("severities")) patch.severities = all.severities;
      if (fields.has("events")) patch.events = all.events;
      checkAdvisoryFields(v, patch);
      v.throwIfAny();
      return toAdvisory(await store.updateAdvisory(body.uid, patch, now()));
    },

    async deleteAdvisory(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteAdvisory(req.uid);
      return {};
    },
  };
}

/** An advisory's value for a sort field: `name` is its advisoryId. */
export function advisorySortValue(a: AdvisoryRecord, field: SortField): string | number {
  return field === "name" ? a.advisoryId : sortValueOf(a, field);
}

/** The content of an advisory message, as the store takes it (a missing time is 0). */
function contentOf(a: Advisory): AdvisoryContent {
  return {
    advisoryId: a.advisoryId,
    aliases: [...a.aliases],
    summary: a.summary,
    artifactName: a.artifactName,
    componentName: a.componentName,
    componentType: a.componentType,
    severities: a.severities.map((s) => ({ type: s.type, score: s.score })),
    events: a.events.map(eventOf),
  };
}

function eventOf(e: Event): AdvisoryEvent {
  return {
    time: e.time ? msOf(e.time) : 0,
    type: e.type as number as EventTypeNumber,
    note: e.note,
    fixedVersion: e.fixedVersion,
  };
}

function msOf(t: Timestamp): number {
  return timestampDate(t).getTime();
}

/** Map a stored advisory to its API message. */
export function toAdvisory(a: AdvisoryRecord): Advisory {
  return create(AdvisorySchema, {
    uid: a.uid,
    advisoryId: a.advisoryId,
    aliases: a.aliases,
    summary: a.summary,
    artifactName: a.artifactName,
    componentName: a.componentName,
    componentType: a.componentType,
    severities: a.severities,
    events: a.events.map((e) => ({
      // An unknown time (0) stays unset rather than claiming 1970.
      ...(e.time > 0 ? { time: timestampFromMs(e.time) } : {}),
      type: e.type,
      note: e.note,
      fixedVersion: e.fixedVersion,
    })),
    latestEventType: a.latestEventType,
    createTime: timestampFromMs(a.createTime),
    updateTime: timestampFromMs(a.updateTime),
  });
}
