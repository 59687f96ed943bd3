import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GroupRefSchema,
  IdentityRefSchema,
  RoleRefSchema,
  TeamRefSchema,
} from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  BatchCreateRoleBindingsResponseSchema,
  type CreateRoleBindingRequest,
  ListRoleBindingsResponseSchema,
  type RoleBinding,
  RoleBindingSchema,
  RoleBindingsService,
} from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { kCallChange, storeOf } from "../../call-store.js";
import { invalidField, notFound } from "../../errors.js";
import { adapterCallScope } from "../../events/audit-interceptor.js";
import { checkExpireTime } from "../../grants/binding-expiry.js";
import { requireGrantable } from "../../grants/grant-rule.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type { RoleBindingFilters, RoleBindingRecord } from "../../store/iam-store.js";
import { roleBindings } from "../../store/rows/role-binding-rows.js";
import type { SortField, Store } from "../../store/store.js";
import { newChildUid, rootOf } from "../../uid.js";
import { checkUid, violations } from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { deleteIfPresent } from "../idempotent-delete.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { settleImmutable, updateRequest } from "../update-mask.js";

/** The fields a List of roleBindings may be ordered by: its message's scalars that a column keeps. */
const roleBindingsSorts = sortFieldsOf(RoleBindingSchema, roleBindings.listColumns);

/** What the role-bindings service needs. */
export interface RoleBindingsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
}

/** The most bindings one BatchCreateRoleBindings makes. */
export const maxBatchBindings = 100;

const createMethod = RoleBindingsService.method.createRoleBinding;

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(RoleBindingSchema);

// One answer for a missing identity, one of another organization and a person who is not in
// this organization, so that a caller learns nothing about other organizations or people.
const foreignIdentity =
  "must be an identity of the group's organization, or a person already in it (people join through invites)";
const foreignTeam = "must be a team of the group's organization";
const oneHolder = "exactly one of identityUid and teamUid is required";

/**
 * Create the RoleBindingsService: grants of a role to an identity at a group, and so at every
 * group below it. Nobody grants what they do not hold at that group.
 */
export function createRoleBindingsService(
  deps: RoleBindingsDeps,
): ServiceImpl<typeof RoleBindingsService> {
  const { store, lists, now } = deps;

  /** Whether the person holds any binding in the organization `org`. */
  async function isMember(tx: Store, personUid: string, org: string): Promise<boolean> {
    const page = await tx.listRoleBindings({
      descendantsOf: org,
      filters: { identity: personUid },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 1,
    });
    return page.items.length > 0;
  }

  /**
   * Bind `body`'s identity to its role at `parent`, in `tx`: the group exists, the identity
   * is the organization's (or a person already in it), and the caller may grant the role there.
   * `at` prefixes the field a refusal names (`requests[2].roleBinding.`, in a batch).
   */
  async function grant(
    tx: Store,
    authorizer: Authorizer,
    caller: ReturnType<typeof callerOf>,
    parent: string,
    body: RoleBinding,
    at = "",
  ): Promise<RoleBindingRecord> {
    if (!(await tx.getGroup(parent))) throw notFound("group", parent);
    if (body.teamUid !== "") {
      // A binding to a team grants its role to every member, now and later: the same rule
      // as a grant to one identity (the caller holds the role's capabilities at the group),
      // and adding a member later needs them too (teams.ts).
      const team = await tx.getTeam(body.teamUid);
      if (!team || rootOf(team.uid) !== rootOf(parent)) {
        throw invalidField(`${at}teamUid`, foreignTeam);
      }
      const inTx = { authorizer, store: tx };
      await requireGrantable(inTx, caller, body.roleUid, parent, `${at}roleUid`);
      const t = now();
      const v = violations();
      const expireTime = checkExpireTime(v, `${at}expireTime`, body.expireTime, t);
      v.throwIfAny();
      return tx.createRoleBinding({
        uid: newChildUid(parent),
        groupUid: parent,
        identityUid: "",
        teamUid: team.uid,
        roleUid: body.roleUid,
        now: t,
        ...(expireTime === undefined ? {} : { expireTime }),
      });
    }
    const identity = await tx.getIdentity(body.identityUid);
    const person = identity?.groupUid === "";
    if (!identity || !(person || rootOf(identity.uid) === rootOf(parent))) {
      throw invalidField(`${at}identityUid`, foreignIdentity);
    }
    // A person joins an organization through an invite. Binding a stranger by uid would
    // tell whether that person exists, show their name and email, and bind them unasked.
    if (person && !(await isMember(tx, identity.uid, rootOf(parent)))) {
      throw invalidField(`${at}identityUid`, foreignIdentity);
    }
    await requireGrantable({ authorizer, store: tx }, caller, body.roleUid, parent, `${at}roleUid`);
    const t = now();
    const v = violations();
    const expireTime = checkExpireTime(v, `${at}expireTime`, body.expireTime, t);
    v.throwIfAny();
    return tx.createRoleBinding({
      uid: newChildUid(parent),
      groupUid: parent,
      identityUid: identity.uid,
      roleUid: body.roleUid,
      now: t,
      ...(expireTime === undefined ? {} : { expireTime }),
    });
  }

  return {
    async listRoleBindings(req, ctx) {
      const v = violations();
      const filters: RoleBindingFilters = {};
      for (const key of ["identity", "group", "role", "team"] as const) {
        if (req[key] === "") continue;
        checkUid(v, key, req[key]);
        filters[key] = req[key];
      }
      v.throwIfAny();
      const query = lists.parse(req, filters, { ...listOptionsOf(ctx), sort: roleBindingsSorts });
      const page = await store.listRoleBindings(query);
      const { items, ...envelope } = lists.finish(query, page, bindingSortValue);
      return create(ListRoleBindingsResponseSchema, {
        roleBindings: items.map(toRoleBinding),
        ...envelope,
      });
    },

    async getRoleBinding(req) {
      return toRoleBinding(
        await requireFound("role binding", req.uid, (uid) => store.getRoleBinding(uid)),
      );
    },

    async createRoleBinding(req, ctx) {
      const store = storeOf(ctx);
      const body = req.roleBinding ?? create(RoleBindingSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkHolder(v, "", body);
      checkUid(v, "roleUid", body.roleUid);
      checkExpireTime(v, "expireTime", body.expireTime, now());
      v.throwIfAny();
      // The checks and the grant commit together: the caller still holds what it grants.
      const binding = await atomically(store, (tx, authorizer) =>
        grant(tx, authorizer, callerOf(ctx), req.parent, body),
      );
      return toRoleBinding(binding);
    },

    async batchCreateRoleBindings(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "parent", req.parent);
      if (req.requests.length === 0) v.add("requests", "must name at least one role binding");
      if (req.requests.length > maxBatchBindings) {
        v.add("requests", `may name at most ${maxBatchBindings} role bindings`);
      }
      req.requests.slice(0, maxBatchBindings).forEach((r, i) => {
        const at = `requests[${i}]`;
        if (r.parent !== "" && r.parent !== req.parent) {
          v.add(`${at}.parent`, "must be empty or equal the batch's parent");
        }
        const body = r.roleBinding ?? create(RoleBindingSchema);
        checkHolder(v, `${at}.roleBinding.`, body);
        checkUid(v, `${at}.roleBinding.roleUid`, body.roleUid);
        checkExpireTime(v, `${at}.roleBinding.expireTime`, body.expireTime, now());
      });
      v.throwIfAny();
      const caller = callerOf(ctx);
      const outer = ctx.values.get(kCallChange)?.scope;
      // All or nothing: every check and every grant in one transaction; the first refusal
      // rolls back those before it. Each binding records its own `role_binding.created`, the
      // event a CreateRoleBinding of it records.
      const made = await atomically(store, async (tx, authorizer) => {
        const out: RoleBindingRecord[] = [];
        for (const [i, r] of req.requests.entries()) {
          const body = r.roleBinding ?? create(RoleBindingSchema);
          const one = { parent: req.parent, roleBinding: body } as CreateRoleBindingRequest;
          const scope = adapterCallScope(outer, createMethod, one);
          const at = `requests[${i}].roleBinding.`;
          // The binding's own view of the transaction records its own event.
          const view = scope ? tx.recording(scope) : tx;
          out.push(await grant(view, authorizer, caller, req.parent, body, at));
        }
        return out;
      });
      return create(BatchCreateRoleBindingsResponseSchema, {
        roleBindings: made.map(toRoleBinding),
      });
    },

    async updateRoleBinding(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.roleBinding, req.updateMask);
      const changed = await atomically(store, async (tx, authorizer) => {
        const current = await tx.getRoleBinding(body.uid);
        if (!current) throw notFound("role binding", body.uid);
        settleImmutable(
          fields,
          "identity_uid",
          body.identityUid,
          current.identityUid,
          "identityUid",
        );
        settleImmutable(fields, "team_uid", body.teamUid, current.teamUid, "teamUid");
        const roleChanges = fields.has("role_uid") && body.roleUid !== current.roleUid;
        // Named in the mask with no value: the binding lasts until revoked again.
        const expiryChanges = fields.has("expire_time");
        if (!roleChanges && !expiryChanges) return current;
        const roleUid = roleChanges ? body.roleUid : current.roleUid;
        if (roleChanges) checkUid(v, "roleUid", body.roleUid);
        const expireTime = expiryChanges
          ? (checkExpireTime(v, "expireTime", body.expireTime, now()) ?? null)
          : undefined;
        v.throwIfAny();
        // A later or no expiry grants for longer: as a new role, only what the caller could
        // grant there itself.
        const inTx = { authorizer, store: tx };
        await requireGrantable(inTx, callerOf(ctx), roleUid, current.groupUid);
        return tx.updateRoleBinding(body.uid, roleUid, now(), expireTime);
      });
      return toRoleBinding(changed);
    },

    async deleteRoleBinding(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      // A second Delete answers OK: see deleteIfPresent.
      await deleteIfPresent(() => store.deleteRoleBinding(req.uid));
      return {};
    },
  };
}

/** Check that a binding to create names exactly one identity or team, well formed. */
function checkHolder(v: ReturnType<typeof violations>, at: string, body: RoleBinding): void {
  if ((body.identityUid === "") === (body.teamUid === "")) {
    v.add(`${at}${body.teamUid === "" ? "identityUid" : "teamUid"}`, oneHolder);
  } else if (body.teamUid !== "") checkUid(v, `${at}teamUid`, body.teamUid);
  else checkUid(v, `${at}identityUid`, body.identityUid);
}

/** A binding's value for a sort field; its name is its role's. */
function bindingSortValue(b: RoleBindingRecord, field: SortField): string | number {
  return field === "name" ? b.role.name : sortValueOf(b, field);
}

/** Map a stored, hydrated binding to its API message. */
export function toRoleBinding(b: RoleBindingRecord): RoleBinding {
  return create(RoleBindingSchema, {
    uid: b.uid,
    ...(b.team
      ? { team: create(TeamRefSchema, b.team) }
      : { identity: create(IdentityRefSchema, b.identity) }),
    group: create(GroupRefSchema, b.group),
    role: create(RoleRefSchema, b.role),
    createTime: timestampFromMs(b.createTime),
    ...(b.expireTime === undefined ? {} : { expireTime: timestampFromMs(b.expireTime) }),
  });
}
