import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { RoleRef } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  type Role,
  RoleListSchema,
  RoleSchema,
  type RolesService,
} from "../../../gen/gatehouse/iam/v1/roles_pb.js";
import {
  type Role as V2Role,
  RolesService as V2RolesService,
} from "../../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { parentOf } from "../../uid.js";
import { getOrNothing, listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps, V2Calls } from "./v2-calls.js";

const v2 = V2RolesService.method;

/** Create the v1 RolesService, an adapter over the v2 RolesService. */
export function createV1RolesService({ v2: calls }: V1Deps): ServiceImpl<typeof RolesService> {
  return {
    async create(req, ctx) {
      const role = req.role ?? create(RoleSchema);
      const made = await calls.call(
        v2.createRole,
        {
          parent: req.parentId,
          role: { name: role.name, description: role.description, capabilities: role.capabilities },
        },
        ctx,
      );
      return toV1Role(made);
    },

    async update(req, ctx) {
      // PUT replaces: every field v1 may write, given or not.
      const updated = await calls.call(
        v2.updateRole,
        {
          role: {
            uid: req.id,
            name: req.name,
            description: req.description,
            capabilities: req.capabilities,
          },
          updateMask: { paths: ["name", "description", "capabilities"] },
        },
        ctx,
      );
      return toV1Role(updated);
    },

    async list(req, ctx) {
      // `parent` `/` means the built-in roles, whose uids have no parent.
      const parent = req.parent === "/" ? "" : req.parent;
      const keep = (r: V2Role) =>
        uidpKeeps(req.uidp, r.uid) &&
        (req.name === "" || r.name === req.name) &&
        (req.parent === "" || parentOf(r.uid) === parent);
      const roles = await listOrGet({
        what: "roles",
        id: req.id,
        get: (uid) => calls.call(v2.getRole, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listRoles,
            { uidp: v2Uidp(req.uidp), name: req.name, pageSize, pageToken },
            ctx,
          );
          return { items: page.roles, nextPageToken: page.nextPageToken };
        },
        keep,
      });
      return create(RoleListSchema, { items: roles.map(toV1Role) });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteRole, { uid: req.id }, ctx);
      return {};
    },
  };
}

/** A v2 role in v1's shape. */
export function toV1Role(r: V2Role): Role {
  return create(RoleSchema, {
    id: r.uid,
    name: r.name,
    description: r.description,
    capabilities: r.capabilities,
  });
}

/**
 * A hydrator of roles for v1 read shapes (a binding's role, an invite's role): the whole role
 * where the caller may read it through v2 (GetRole), else the summary v2 already showed.
 * Each role is fetched once per hydrator (one per call).
 */
export function roleHydrator(
  calls: V2Calls,
  ctx: HandlerContext,
): (ref: Pick<RoleRef, "uid" | "name" | "description"> | undefined) => Promise<Role> {
  const seen = new Map<string, Promise<Role | undefined>>();
  return async (ref) => {
    const uid = ref?.uid ?? "";
    let p = seen.get(uid);
    if (!p) {
      p = getOrNothing(() => calls.call(v2.getRole, { uid }, ctx)).then((r) =>
        r[0] ? toV1Role(r[0]) : undefined,
      );
      seen.set(uid, p);
    }
    return (
      (await p) ??
      create(RoleSchema, { id: uid, name: ref?.name ?? "", description: ref?.description ?? "" })
    );
  };
}
