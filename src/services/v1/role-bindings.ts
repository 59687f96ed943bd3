import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type RoleBinding,
  RoleBindingBatchSchema,
  type RoleBindingList_Binding,
  RoleBindingList_BindingSchema,
  RoleBindingListSchema,
  RoleBindingSchema,
  type RoleBindingsService,
} from "../../../gen/gatehouse/iam/v1/role_bindings_pb.js";
import {
  type RoleBinding as V2RoleBinding,
  RoleBindingsService as V2RoleBindingsService,
} from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { parentOf } from "../../uid.js";
import { groupHydrator } from "./groups.js";
import { roleHydrator } from "./roles.js";
import { listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps, V2Calls } from "./v2-calls.js";

const v2 = V2RoleBindingsService.method;

/** Create the v1 RoleBindingsService, an adapter over the v2 RoleBindingsService. */
export function createV1RoleBindingsService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof RoleBindingsService> {
  const createOne = async (parent: string, b: RoleBinding | undefined, ctx: HandlerContext) => {
    const made = await calls.call(
      v2.createRoleBinding,
      { parent, roleBinding: { identityUid: b?.identity ?? "", roleUid: b?.role ?? "" } },
      ctx,
    );
    return toV1RoleBinding(made);
  };
  return {
    create(req, ctx) {
      return createOne(req.parent, req.roleBinding, ctx);
    },

    async createBatch(req, ctx) {
      // One v2 batch: all or nothing, one event per binding. An empty v1 batch creates
      // nothing, but a parent the v2 batch would refuse (missing, malformed, or not the
      // caller's to bind at) is refused all the same.
      if (req.roleBindings.length === 0) {
        await calls.authorize(v2.batchCreateRoleBindings, { parent: req.parent }, ctx);
        return create(RoleBindingBatchSchema, { roleBindings: [] });
      }
      const made = await calls.call(
        v2.batchCreateRoleBindings,
        {
          parent: req.parent,
          requests: req.roleBindings.map((b) => ({
            roleBinding: { identityUid: b.identity, roleUid: b.role },
          })),
        },
        ctx,
      );
      return create(RoleBindingBatchSchema, {
        roleBindings: made.roleBindings.map(toV1RoleBinding),
      });
    },

    async update(req, ctx) {
      // The role is all a binding lets change: PUT replaces it. Its identity and group stay.
      const updated = await calls.call(
        v2.updateRoleBinding,
        { roleBinding: { uid: req.id, roleUid: req.role }, updateMask: { paths: ["role_uid"] } },
        ctx,
      );
      return toV1RoleBinding(updated);
    },

    async list(req, ctx) {
      const keep = (b: V2RoleBinding) => uidpKeeps(req.uidp, b.uid);
      const bindings = await listOrGet({
        what: "role bindings",
        id: req.id,
        get: (uid) => calls.call(v2.getRoleBinding, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listRoleBindings,
            { uidp: v2Uidp(req.uidp), pageSize, pageToken },
            ctx,
          );
          return { items: page.roleBindings, nextPageToken: page.nextPageToken };
        },
        keep,
      });
      const hydrate = hydrator(calls, ctx);
      const items: RoleBindingList_Binding[] = [];
      for (const b of bindings) items.push(await hydrate(b));
      return create(RoleBindingListSchema, { items });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteRoleBinding, { uid: req.id }, ctx);
      return {};
    },
  };
}

/** A v2 binding in v1's write shape: ids only. */
function toV1RoleBinding(b: V2RoleBinding): RoleBinding {
  return create(RoleBindingSchema, {
    id: b.uid,
    identity: b.identity?.uid ?? "",
    group: b.group?.uid ?? parentOf(b.uid),
    role: b.role?.uid ?? "",
  });
}

/** The v1 read shape of bindings, hydrated by groupHydrator and roleHydrator. */
function hydrator(calls: V2Calls, ctx: HandlerContext) {
  const group = groupHydrator(calls, ctx);
  const role = roleHydrator(calls, ctx);
  return async (b: V2RoleBinding): Promise<RoleBindingList_Binding> =>
    create(RoleBindingList_BindingSchema, {
      id: b.uid,
      group: await group(b.group ?? { uid: parentOf(b.uid), name: "", description: "" }),
      identity: b.identity?.uid ?? "",
      role: await role(b.role),
      claimMatchIssuer: b.identity?.issuer ?? "",
      claimMatchSubject: b.identity?.subject ?? "",
      createdAt: b.createTime,
    });
}
