import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Group } from "../../../gen/gatehouse/iam/v1/groups_pb.js";
import { GroupSchema } from "../../../gen/gatehouse/iam/v1/groups_pb.js";
import {
  type RoleBinding,
  RoleBindingBatchSchema,
  type RoleBindingList_Binding,
  RoleBindingList_BindingSchema,
  RoleBindingListSchema,
  RoleBindingSchema,
  type RoleBindingsService,
} from "../../../gen/gatehouse/iam/v1/role_bindings_pb.js";
import { type Role, RoleSchema } from "../../../gen/gatehouse/iam/v1/roles_pb.js";
import { GroupsService as V2GroupsService } from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import {
  type RoleBinding as V2RoleBinding,
  RoleBindingsService as V2RoleBindingsService,
} from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { RolesService as V2RolesService } from "../../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { parentOf } from "../../uid.js";
import { toV1Group, type V1Deps } from "./groups.js";
import { toV1Role } from "./roles.js";
import { collectPages, getOrNothing, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V2Calls } from "./v2-calls.js";

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
      // One v2 Create each, in order: the first refusal ends the batch (those before it stay).
      const made: RoleBinding[] = [];
      for (const b of req.roleBindings) made.push(await createOne(req.parent, b, ctx));
      return create(RoleBindingBatchSchema, { roleBindings: made });
    },

    async update(req, ctx) {
      // The role is all a binding lets change: PUT replaces it. Its identity and group stay.
      const updated = await calls.call(
        v2.updateRoleBinding,
        { roleBinding: { uid: req.id, roleUid: req.role }, updateMask: { paths: ["*"] } },
        ctx,
      );
      return toV1RoleBinding(updated);
    },

    async list(req, ctx) {
      const keep = (b: V2RoleBinding) => uidpKeeps(req.uidp, b.uid);
      const bindings =
        req.id !== ""
          ? (await getOrNothing(() => calls.call(v2.getRoleBinding, { uid: req.id }, ctx))).filter(
              keep,
            )
          : await collectPages(
              "role bindings",
              async (pageSize, pageToken) => {
                const page = await calls.call(
                  v2.listRoleBindings,
                  { uidp: v2Uidp(req.uidp), pageSize, pageToken },
                  ctx,
                );
                return { items: page.roleBindings, nextPageToken: page.nextPageToken };
              },
              keep,
            );
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

/**
 * The v1 read shape of bindings: the whole group and role where the caller may read them
 * through v2 (GetGroup, GetRole), else the summary the v2 binding itself carries. Each group
 * and role is fetched once per List.
 */
function hydrator(calls: V2Calls, ctx: HandlerContext) {
  const groups = new Map<string, Promise<Group | undefined>>();
  const roles = new Map<string, Promise<Role | undefined>>();
  const once = <T>(
    cache: Map<string, Promise<T | undefined>>,
    uid: string,
    get: () => Promise<T>,
  ) => {
    let p = cache.get(uid);
    if (!p) {
      p = getOrNothing(get).then((found) => found[0]);
      cache.set(uid, p);
    }
    return p;
  };
  return async (b: V2RoleBinding): Promise<RoleBindingList_Binding> => {
    const groupUid = b.group?.uid ?? parentOf(b.uid);
    const roleUid = b.role?.uid ?? "";
    const group =
      (await once(groups, groupUid, async () =>
        toV1Group(await calls.call(V2GroupsService.method.getGroup, { uid: groupUid }, ctx)),
      )) ??
      create(GroupSchema, {
        id: groupUid,
        name: b.group?.name ?? "",
        description: b.group?.description ?? "",
      });
    const role =
      (await once(roles, roleUid, async () =>
        toV1Role(await calls.call(V2RolesService.method.getRole, { uid: roleUid }, ctx)),
      )) ??
      create(RoleSchema, {
        id: roleUid,
        name: b.role?.name ?? "",
        description: b.role?.description ?? "",
      });
    return create(RoleBindingList_BindingSchema, {
      id: b.uid,
      group,
      identity: b.identity?.uid ?? "",
      role,
      claimMatchIssuer: b.identity?.issuer ?? "",
      claimMatchSubject: b.identity?.subject ?? "",
      createdAt: b.createTime,
    });
  };
}
