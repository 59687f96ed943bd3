import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AdvisoriesListSchema,
  type AdvisoriesService,
  type Advisory,
  type AdvisoryEvent,
  AdvisoryEventSchema,
  AdvisorySchema,
  DetectionSchema,
  FixedSchema,
  NoteSchema,
  OrderBy,
} from "../../../gen/gatehouse/vulnerabilities/v1/advisories_pb.js";
import {
  EventType,
  AdvisoriesService as V2AdvisoriesService,
  type Advisory as V2Advisory,
  type Event as V2Event,
  type EventSchema as V2EventSchema,
} from "../../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { invalidField } from "../../errors.js";
import { getOrNothing, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps } from "./v2-calls.js";

const v2 = V2AdvisoriesService.method;

/** What a v1 PUT replaces: the fields v1 shows (not the summary or severities). */
const replaced = [
  "advisory_id",
  "aliases",
  "artifact_name",
  "component_name",
  "component_type",
  "events",
];

/** v1 event kinds carrying only a note, and the v2 event type of each. */
const noteKinds = {
  falsePositiveDetermination: EventType.FALSE_POSITIVE,
  analysisNotPlanned: EventType.ANALYSIS_NOT_PLANNED,
  fixNotPlanned: EventType.FIX_NOT_PLANNED,
  pendingUpstreamFix: EventType.PENDING_UPSTREAM_FIX,
  truePositiveDetermination: EventType.TRUE_POSITIVE,
} as const;

/**
 * Create the v1 AdvisoriesService, an adapter over the v2 AdvisoriesService. Unlike the other
 * v1 Lists, v1's advisories List pages, and so does this one: a page of v2 at a time.
 */
export function createV1AdvisoriesService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof AdvisoriesService> {
  return {
    async create(req, ctx) {
      const made = await calls.call(
        v2.createAdvisory,
        { parent: req.parentId, advisory: toV2(req.advisory ?? create(AdvisorySchema)) },
        ctx,
      );
      return toV1Advisory(made);
    },

    async update(req, ctx) {
      const updated = await calls.call(
        v2.updateAdvisory,
        { advisory: { ...toV2(req), uid: req.id }, updateMask: { paths: replaced } },
        ctx,
      );
      return toV1Advisory(updated);
    },

    async list(req, ctx) {
      if (req.id !== "") {
        const found = await getOrNothing(() => calls.call(v2.getAdvisory, { uid: req.id }, ctx));
        const items = found.filter((a) => uidpKeeps(req.uidp, a.uid)).map(toV1Advisory);
        return create(AdvisoriesListSchema, { items, totalCount: BigInt(items.length) });
      }
      const one = (field: string, values: string[]) => {
        if (values.length > 1) throw invalidField(field, "takes at most one value here");
        return values[0] ?? "";
      };
      const page = await calls.call(
        v2.listAdvisories,
        {
          uidp: v2Uidp(req.uidp),
          name: one("advisory_ids", req.advisoryIds),
          aliases: one("aliases", req.aliases),
          artifactName: one("artifact_name", req.artifactName),
          componentName: one("component_name", req.componentName),
          pageSize: Number(req.pageSize > 1000n ? 1000n : req.pageSize),
          pageToken: req.pageToken,
          orderBy: v2OrderBy(req.orderBy),
        },
        ctx,
      );
      return create(AdvisoriesListSchema, {
        items: page.advisories.filter((a) => uidpKeeps(req.uidp, a.uid)).map(toV1Advisory),
        nextPageToken: page.nextPageToken ?? "",
        totalCount: page.totalCount,
      });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteAdvisory, { uid: req.id }, ctx);
      return {};
    },
  };
}

/** The writable part of a v1 advisory, as v2 takes it. */
function toV2(a: Advisory) {
  return {
    advisoryId: a.advisoryId,
    aliases: a.aliases,
    artifactName: a.artifactName,
    componentName: a.componentName,
    componentType: a.componentType,
    events: a.events.map(toV2Event),
  };
}

function toV2Event(e: AdvisoryEvent): MessageInitShape<typeof V2EventSchema> {
  const time = e.timestamp ? { time: e.timestamp } : {};
  switch (e.type.case) {
    case "detection":
      return { ...time, type: EventType.DETECTED };
    case "fixed":
      return {
        ...time,
        type: EventType.FIXED,
        fixedVersion: e.type.value.fixedVersion,
        note: e.type.value.note,
      };
    case undefined:
      // No kind: v2 refuses an unspecified event type, as it should.
      return { ...time, type: EventType.EVENT_TYPE_UNSPECIFIED };
    default:
      return { ...time, type: noteKinds[e.type.case], note: e.type.value.note };
  }
}

function toV1Event(e: V2Event): AdvisoryEvent {
  const out = create(AdvisoryEventSchema, { timestamp: e.time });
  const note = { note: e.note };
  switch (e.type) {
    case EventType.DETECTED:
      out.type = {
        case: "detection",
        value: create(DetectionSchema, { manual: {} }),
      };
      break;
    case EventType.FIXED:
      out.type = {
        case: "fixed",
        value: create(FixedSchema, { fixedVersion: e.fixedVersion, note: e.note }),
      };
      break;
    default: {
      const kind = (Object.keys(noteKinds) as (keyof typeof noteKinds)[]).find(
        (k) => noteKinds[k] === e.type,
      );
      if (kind) {
        out.type = {
          case: kind,
          value: create(NoteSchema, note),
        };
      }
    }
  }
  return out;
}

/** A v2 advisory in v1's shape. */
function toV1Advisory(a: V2Advisory): Advisory {
  return create(AdvisorySchema, {
    id: a.uid,
    advisoryId: a.advisoryId,
    aliases: a.aliases,
    artifactName: a.artifactName,
    componentName: a.componentName,
    componentType: a.componentType,
    events: a.events.map(toV1Event),
    createdAt: a.createTime,
    updatedAt: a.updateTime,
  });
}

/**
 * v1's advisory order as v2's `order_by`: by id (v1's default), creation or update time. An
 * order v2 cannot give (by aliases, a list; by deletion time, which advisories do not have) is
 * refused rather than ignored.
 */
function v2OrderBy(order: OrderBy): string {
  switch (order) {
    case OrderBy.ORDER_BY_UNSPECIFIED:
    case OrderBy.ID_ASC:
      return "uid";
    case OrderBy.ID_DESC:
      return "uid desc";
    case OrderBy.CREATED_AT_ASC:
      return "create_time";
    case OrderBy.CREATED_AT_DESC:
      return "create_time desc";
    case OrderBy.UPDATED_AT_ASC:
      return "update_time";
    case OrderBy.UPDATED_AT_DESC:
      return "update_time desc";
    default:
      throw invalidField(
        "order_by",
        "must be ID_ASC, ID_DESC, CREATED_AT_ASC, CREATED_AT_DESC, UPDATED_AT_ASC or UPDATED_AT_DESC (aliases and deletion times are not sortable)",
      );
  }
}
