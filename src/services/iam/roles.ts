import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListRolesResponseSchema,
  type Role,
  RoleSchema,
  type RolesService,
} from "../../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { canonicalCapability, nearestCapability } from "../../auth/capabilities.js";
import { storeOf } from "../../call-store.js";
import { failedPrecondition, notFound } from "../../errors.js";
import { requireAll } from "../../grants/grant-rule.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type { RolePatch, RoleRecord } from "../../store/iam-store.js";
import { roles } from "../../store/rows/role-rows.js";
import type { Store } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import {
  checkDescription,
  checkDisplayName,
  checkUid,
  labelsPatch,
  type Violations,
  violations,
} from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of roles may be ordered by: its message's scalars that a column keeps. */
const rolesSorts = sortFieldsOf(RoleSchema, roles.listColumns);

/** What the roles service needs. */
export interface RolesDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
}

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(RoleSchema);

/**
 * Create the RolesService: the built-in roles and custom roles, each a set of capabilities.
 * A custom role lives in a group and can be bound there and below.
 */
export function createRolesService(deps: RolesDeps): ServiceImpl<typeof RolesService> {
  const { store, lists, now } = deps;
  return {
    async listRoles(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: rolesSorts });
      const page = await store.listRoles(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListRolesResponseSchema, { roles: items.map(toRole), ...envelope });
    },

    async getRole(req) {
      return toRole(await requireFound("role", req.uid, (uid) => store.getRole(uid)));
    },

    async createRole(req, ctx) {
      const store = storeOf(ctx);
      const body = req.role ?? create(RoleSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkDisplayName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      const caps = checkCapabilities(v, body.capabilities);
      v.throwIfAny();
      const uid = newChildUid(req.parent);
      // Nobody defines a role with more than they hold: checked where the role commits.
      const role = await atomically(store, async (tx, authorizer) => {
        if (!(await tx.getGroup(req.parent))) throw notFound("group", req.parent);
        await requireAll(authorizer, callerOf(ctx), caps, req.parent);
        return tx.createRole({
          uid,
          groupUid: req.parent,
          name: body.name,
          description: body.description,
          capabilities: caps,
          now: now(),
        });
      });
      return toRole(role);
    },

    async updateRole(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.role, req.updateMask);
      const patch: RolePatch = labelsPatch(v, fields, body, checkDisplayName);
      if (fields.has("capabilities")) {
        patch.capabilities = checkCapabilities(v, body.capabilities);
      }
      v.throwIfAny();
      const updated = await atomically(store, async (tx, authorizer) => {
        const current = await tx.getRole(body.uid);
        if (!current) throw notFound("role", body.uid);
        if (current.builtin) throw failedPrecondition("built-in roles cannot be changed");
        if (patch.capabilities) {
          await requireAll(authorizer, callerOf(ctx), patch.capabilities, current.groupUid);
        }
        return tx.updateRole(body.uid, patch, now());
      });
      return toRole(updated);
    },

    async deleteRole(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteRole(req.uid);
      return {};
    },
  };
}

/**
 * Check a role's capabilities (at least one, every one in the catalog or an alias of one);
 * return them in the catalog's spelling, deduplicated.
 */
function checkCapabilities(v: Violations, caps: readonly string[]): string[] {
  if (caps.length === 0) {
    v.add("capabilities", "at least one capability is required");
    return [];
  }
  const unknown = caps.filter((c) => !canonicalCapability(c));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 5).map((c) => {
      const near = nearestCapability(c);
      return `${JSON.stringify(c.slice(0, 64))}${near ? ` (did you mean "${near}"?)` : ""}`;
    });
    v.add("capabilities", `unknown capabilities: ${shown.join(", ")}`);
  }
  // An alias (repos.create) is stored as the catalog spells it (repo.create).
  return [...new Set(caps.map((c) => canonicalCapability(c) ?? c))];
}

/** Map a stored role to its API message. */
export function toRole(r: RoleRecord): Role {
  return create(RoleSchema, {
    uid: r.uid,
    name: r.name,
    description: r.description,
    capabilities: r.capabilities,
    createTime: timestampFromMs(r.createTime),
    updateTime: timestampFromMs(r.updateTime),
  });
}
