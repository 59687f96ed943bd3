import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Group,
  GroupSchema,
  type GroupsService,
  ListGroupsResponseSchema,
} from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ownerRole } from "../../auth/capabilities.js";
import {
  type OrganizationCreationSettings,
  requireOrganizationCreation,
} from "../../auth/organization-creation.js";
import { storeOf } from "../../call-store.js";
import { failedPrecondition, notFound } from "../../errors.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import { groups } from "../../store/rows/group-rows.js";
import type { GroupPatch, GroupRecord, Store } from "../../store/store.js";
import { depthOf, maxGroupDepth, newChildUid, newRootUid } from "../../uid.js";
import {
  checkDescription,
  checkGroupName,
  checkUid,
  labelsPatch,
  violations,
} from "../../validation/field-rules.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of groups may be ordered by: its message's scalars that a column keeps. */
const groupsSorts = sortFieldsOf(GroupSchema, groups.listColumns);

/** What the groups service needs. */
export interface GroupsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  /** Who may create organizations (the operator's setting). */
  config: OrganizationCreationSettings;
}

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(GroupSchema);

/**
 * Create the GroupsService: the tree of groups, whose roots are organizations. Creating an
 * organization binds its creator as owner.
 */
export function createGroupsService(deps: GroupsDeps): ServiceImpl<typeof GroupsService> {
  const { store, lists, now, config } = deps;
  return {
    async listGroups(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: groupsSorts });
      const page = await store.listGroups(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListGroupsResponseSchema, { groups: items.map(toGroup), ...envelope });
    },

    async getGroup(req) {
      return toGroup(await requireFound("group", req.uid, (uid) => store.getGroup(uid)));
    },

    async createGroup(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      if (req.parent !== "") checkUid(v, "parent", req.parent);
      const name = req.group?.name ?? "";
      const description = req.group?.description ?? "";
      checkGroupName(v, "name", name);
      checkDescription(v, "description", description);
      v.throwIfAny();
      // A missing parent is NOT_FOUND: the store's create says so (both backends look the
      // parent up in the write), so a create reads it only here, where a parent too deep
      // must still be found first, as it always was.
      if (req.parent !== "" && depthOf(req.parent) >= maxGroupDepth) {
        if (!(await store.getGroup(req.parent))) throw notFound("group", req.parent);
        throw failedPrecondition(
          `groups nest at most ${maxGroupDepth} levels below their organization`,
        );
      }
      if (req.parent === "") {
        // An organization: the calling person (the policy admits no one else) becomes owner,
        // if the operator lets them create one.
        const caller = callerOf(ctx).identityUid;
        const person = await requireFound("identity", caller, (uid) => store.getIdentity(uid));
        requireOrganizationCreation(config, person);
        const uid = newRootUid();
        const group = await store.createOrganization(
          { uid, name, description, now: now() },
          {
            bindingUid: newChildUid(uid),
            identityUid: callerOf(ctx).identityUid,
            roleUid: ownerRole.uid,
          },
        );
        return toGroup(group);
      }
      const group = await store.createGroup({
        uid: newChildUid(req.parent),
        parentUid: req.parent,
        name,
        description,
        now: now(),
      });
      return toGroup(group);
    },

    async updateGroup(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.group, req.updateMask);
      const patch: GroupPatch = labelsPatch(v, fields, body, checkGroupName);
      v.throwIfAny();
      return toGroup(await store.updateGroup(body.uid, patch, now()));
    },

    async deleteGroup(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteGroup(req.uid);
      return {};
    },
  };
}

/** Map a stored group to its API message. */
export function toGroup(g: GroupRecord): Group {
  return create(GroupSchema, {
    uid: g.uid,
    name: g.name,
    description: g.description,
    resourceLimits: g.resourceLimits,
    verified: g.verified,
    createTime: timestampFromMs(g.createTime),
    updateTime: timestampFromMs(g.updateTime),
  });
}
