import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { RoleRefSchema } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  type AccessGrant,
  AccessGrantSchema,
  type AccessService,
  type AccessShortfall,
  AccessShortfall_Lack,
  AccessShortfallSchema,
  CheckAccessResponseSchema,
  ListCallerCapabilitiesResponseSchema,
} from "../../../gen/gatehouse/iam/v2beta1/access_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import {
  builtinRoles,
  type Capability,
  canonicalCapability,
  capabilities,
  isCapability,
  nearestCapability,
} from "../../auth/capabilities.js";
import { capabilityDescription } from "../../auth/capability-catalog.js";
import type { RoleBindingRecord, RoleRecord } from "../../store/iam-store.js";
import type { Store } from "../../store/store.js";
import { depthOf, isAtOrBelow, rootOf } from "../../uid.js";
import { checkUid, violations } from "../../validation/field-rules.js";
import { callerOf } from "../caller.js";
import { heldBindings } from "../team-bindings.js";
import { toRoleBinding } from "./role-bindings.js";

/** What the access service needs. */
export interface AccessDeps {
  store: Store;
  authorizer: Authorizer;
}

/** The most bindings of one identity an explanation reads; an identity rarely holds a few. */
const maxBindings = 1000;
/** The most shortfalls a denied answer lists, nearest first. */
const maxShortfalls = 20;
/** The most of an organization's own roles a denial reads for the roles that would grant. */
const maxOwnRoles = 200;

/**
 * Create the AccessService: "why may X do Y here" answered from the same role bindings the
 * authorizer decides every call with. The decision itself is the authorizer's; the bindings
 * only explain it. Only bindings in the organization of the group asked about are ever
 * read out, so an answer tells nothing about other organizations.
 */
export function createAccessService(deps: AccessDeps): ServiceImpl<typeof AccessService> {
  const { store, authorizer } = deps;

  /**
   * The roles that would grant `capability` at `group`: the built-in ones that hold it, then
   * the organization's own defined at or above the group that hold it, where the caller may
   * list roles (the first 200 of the organization's roles are read).
   */
  async function grantingRoles(
    capability: Capability,
    group: string,
    caller: ReturnType<typeof callerOf>,
  ) {
    const ref = (r: Pick<RoleRecord, "uid" | "name" | "description">) =>
      create(RoleRefSchema, { uid: r.uid, name: r.name, description: r.description });
    const out = builtinRoles.filter((r) => r.capabilities.includes(capability)).map(ref);
    const scope = await authorizer.listScope(caller, "roles.list");
    const usable = (r: RoleRecord) =>
      isAtOrBelow(group, r.groupUid) && scope.some((s) => isAtOrBelow(r.groupUid, s));
    if (scope.length === 0) return out;
    const page = await store.listRoles({
      descendantsOf: rootOf(group),
      filters: {},
      order: { field: "name", desc: false },
      skip: 0,
      limit: maxOwnRoles,
    });
    for (const r of page.items) {
      if (!r.builtin && usable(r) && r.capabilities.includes(capability)) out.push(ref(r));
    }
    return out;
  }

  return {
    async checkAccess(req, ctx) {
      const v = violations();
      checkUid(v, "identityUid", req.identityUid);
      checkUid(v, "groupUid", req.groupUid);
      // An alias (repos.create) is asked as the catalog spells it (repo.create).
      req = { ...req, capability: canonicalCapability(req.capability) ?? req.capability };
      if (req.capability === "") v.add("capability", "is required");
      else if (!isCapability(req.capability)) {
        const near = nearestCapability(req.capability);
        v.add(
          "capability",
          near
            ? `is not a known capability; did you mean "${near}"?`
            : "is not a known capability (ListCallerCapabilities lists those you hold)",
        );
      }
      v.throwIfAny();
      const held = await authorizer.capabilitiesAt({ identityUid: req.identityUid }, req.groupUid);
      const allowed = held.has(req.capability);
      const org = rootOf(req.groupUid);
      // Bindings that apply at the group (at it or above) explain the answer and are shown to
      // whoever may ask. A binding elsewhere (LACK_SCOPE) is shown only where the caller could
      // list it anyway: about oneself, or under a group where it holds role_bindings.list.
      const caller = callerOf(ctx);
      const visible =
        caller.identityUid === req.identityUid
          ? undefined
          : await authorizer.listScope(caller, "role_bindings.list");
      const shown = (group: string) =>
        visible === undefined || visible.some((v) => isAtOrBelow(group, v));
      const roleCaps = new Map<string, ReadonlySet<string>>();
      const grants: { b: RoleBindingRecord; grant: AccessGrant }[] = [];
      const shortfalls: { b: RoleBindingRecord; distance: number; s: AccessShortfall }[] = [];
      let read = 0;
      // Its own bindings and its teams' in the organization: a grant through a team carries
      // the team (roleBinding.team).
      for await (const b of heldBindings(store, req.identityUid, org)) {
        if (++read > maxBindings) break;
        if (rootOf(b.groupUid) !== org) continue;
        let caps = roleCaps.get(b.roleUid);
        if (!caps) {
          caps = new Set((await store.getRole(b.roleUid))?.capabilities ?? []);
          roleCaps.set(b.roleUid, caps);
        }
        const applies = isAtOrBelow(req.groupUid, b.groupUid);
        const holds = caps.has(req.capability);
        if (applies && holds) {
          const inherited = b.groupUid !== req.groupUid;
          grants.push({
            b,
            grant: create(AccessGrantSchema, { roleBinding: toRoleBinding(b), inherited }),
          });
        } else if (applies || (holds && shown(b.groupUid))) {
          const lack = applies ? AccessShortfall_Lack.CAPABILITY : AccessShortfall_Lack.SCOPE;
          shortfalls.push({
            b,
            distance: treeDistance(b.groupUid, req.groupUid),
            s: create(AccessShortfallSchema, { roleBinding: toRoleBinding(b), lack }),
          });
        }
      }
      // Nearest first: a binding at the group, then its parent's, and so on up.
      grants.sort((x, y) => depthOf(y.b.groupUid) - depthOf(x.b.groupUid) || byUid(x.b, y.b));
      shortfalls.sort((x, y) => x.distance - y.distance || byUid(x.b, y.b));
      const capability = req.capability as Capability;
      return create(CheckAccessResponseSchema, {
        allowed,
        grantingRoles: allowed ? [] : await grantingRoles(capability, req.groupUid, caller),
        capabilityDescription: capabilityDescription(capability),
        // The authorizer's answer decides; a binding granting it is listed only if allowed, so
        // the explanation never contradicts the decision when a write lands between the reads.
        grants: allowed ? grants.map((g) => g.grant) : [],
        shortfalls: allowed ? [] : shortfalls.slice(0, maxShortfalls).map((s) => s.s),
      });
    },

    async listCallerCapabilities(req, ctx) {
      const v = violations();
      checkUid(v, "groupUid", req.groupUid);
      v.throwIfAny();
      // About the caller only: at a group of another organization the answer is empty, whether
      // that group exists or not.
      const held = await authorizer.capabilitiesAt(callerOf(ctx), req.groupUid);
      const listed = capabilities.filter((c) => held.has(c));
      return create(ListCallerCapabilitiesResponseSchema, {
        capabilities: listed,
        descriptions: listed.map(capabilityDescription),
      });
    },
  };
}

function byUid(x: RoleBindingRecord, y: RoleBindingRecord): number {
  return x.uid < y.uid ? -1 : x.uid > y.uid ? 1 : 0;
}

/** How many edges of the group tree lie between two groups of one organization. */
function treeDistance(a: string, b: string): number {
  const as = a.split("/");
  const bs = b.split("/");
  let common = 0;
  while (common < as.length && common < bs.length && as[common] === bs[common]) common++;
  return as.length - common + (bs.length - common);
}
