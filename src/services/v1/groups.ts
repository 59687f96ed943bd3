import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { GroupRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  type Group,
  GroupListSchema,
  GroupSchema,
  type GroupsService,
  LookupGroupResponseSchema,
} from "../../../gen/gatehouse/iam/v1/groups_pb.js";
import { AccessRequestsService } from "../../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import {
  type Group as V2Group,
  GroupsService as V2GroupsService,
} from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ResourceInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { builtinRoles } from "../../auth/capabilities.js";
import { checkUid, violations } from "../../validation/field-rules.js";
import { getOrNothing, listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps, V2Calls } from "./v2-calls.js";

const v2 = V2GroupsService.method;

/**
 * What a v1 RequestGroupAccess asks for, v1 naming only the group: the least role (viewer),
 * for a working day, with a reason that tells reviewers where the request came from.
 */
export const v1AccessRequest = {
  role: builtinRoles.find((r) => r.name === "viewer")!,
  durationSeconds: 8 * 60 * 60,
  reason: "requested through v1",
} as const;

/** Create the v1 GroupsService, an adapter over the v2 GroupsService. */
export function createV1GroupsService({ v2: calls }: V1Deps): ServiceImpl<typeof GroupsService> {
  return {
    async create(req, ctx) {
      const group = req.group ?? create(GroupSchema);
      const made = await calls.call(
        v2.createGroup,
        { parent: req.parent, group: { name: group.name, description: group.description } },
        ctx,
      );
      return toV1Group(made);
    },

    async update(req, ctx) {
      // PUT replaces every field v1 shows and may write (absent is its zero value); fields v1
      // does not show are named nowhere here, so v2 keeps them.
      const updated = await calls.call(
        v2.updateGroup,
        {
          group: { uid: req.id, name: req.name, description: req.description },
          updateMask: { paths: ["name", "description"] },
        },
        ctx,
      );
      return toV1Group(updated);
    },

    async list(req, ctx) {
      const keep = (g: V2Group) =>
        uidpKeeps(req.uidp, g.uid) && (req.name === "" || g.name === req.name);
      const groups = await listOrGet({
        what: "groups",
        id: req.id,
        get: (uid) => calls.call(v2.getGroup, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listGroups,
            { uidp: v2Uidp(req.uidp), name: req.name, pageSize, pageToken },
            ctx,
          );
          return { items: page.groups, nextPageToken: page.nextPageToken };
        },
        keep,
      });
      return create(GroupListSchema, { items: groups.map(toV1Group) });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteGroup, { uid: req.id }, ctx);
      return {};
    },

    async lookupGroup(_req, ctx) {
      // The caller's organization: the roots it may list, the oldest first; for a caller bound
      // only below its organization, the first group it may list in uid order (no group it
      // may list is above it). A v1 client asks with no argument: the answer is the caller's.
      const first = (inRoot: boolean, orderBy: string) =>
        calls.call(
          v2.listGroups,
          { uidp: { descendantsOf: "", childrenOf: "", inRoot }, orderBy, pageSize: 1 },
          ctx,
        );
      const org =
        (await first(true, "create_time")).groups[0] ?? (await first(false, "uid")).groups[0];
      if (!org) {
        throw new ConnectError(
          "Not found: the caller is in no organization",
          Code.NotFound,
          undefined,
          [{ desc: ResourceInfoSchema, value: { resourceType: "group", resourceName: "" } }],
        );
      }
      return create(LookupGroupResponseSchema, { group: toV1Group(org) });
    },

    async requestGroupAccess(req, ctx) {
      // Named as v1 names it (v2 would name `parent`).
      const v = violations();
      checkUid(v, "groupId", req.groupId);
      v.throwIfAny();
      // A v2 access request with v1's defaults; v1 answers nothing but success (the request's
      // uid and state are read through v2beta1 ListAccessRequests / GetAccessRequest).
      await calls.call(
        AccessRequestsService.method.createAccessRequest,
        {
          parent: req.groupId,
          accessRequest: {
            roleUid: v1AccessRequest.role.uid,
            duration: { seconds: BigInt(v1AccessRequest.durationSeconds) },
            reason: v1AccessRequest.reason,
          },
        },
        ctx,
      );
      return {};
    },
  };
}

/** A v2 group in v1's shape. */
export function toV1Group(g: V2Group): Group {
  return create(GroupSchema, {
    id: g.uid,
    name: g.name,
    description: g.description,
    resourceLimits: g.resourceLimits,
    verified: g.verified,
  });
}

/**
 * A hydrator of groups for v1 read shapes (a binding's group): the whole group where the
 * caller may read it through v2 (GetGroup), else the summary v2 already showed. Each group is
 * fetched once per hydrator (one per call).
 */
export function groupHydrator(
  calls: V2Calls,
  ctx: HandlerContext,
): (ref: Pick<GroupRef, "uid" | "name" | "description"> | undefined) => Promise<Group> {
  const seen = new Map<string, Promise<Group | undefined>>();
  return async (ref) => {
    const uid = ref?.uid ?? "";
    let p = seen.get(uid);
    if (!p) {
      p = getOrNothing(() => calls.call(v2.getGroup, { uid }, ctx)).then((g) =>
        g[0] ? toV1Group(g[0]) : undefined,
      );
      seen.set(uid, p);
    }
    return (
      (await p) ??
      create(GroupSchema, { id: uid, name: ref?.name ?? "", description: ref?.description ?? "" })
    );
  };
}
