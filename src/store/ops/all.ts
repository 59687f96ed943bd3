import { rootOf } from "../../uid.js";
import type { NewGroup, Store, StoreRoles } from "../store.js";
import { createAccessQueries } from "./access.js";
import { accessRequestOps } from "./access-requests.js";
import { accountAssociationOps } from "./account-associations.js";
import { advisoryOps } from "./advisories.js";
import { deviceCodeOps } from "./device-codes.js";
import { eventOps } from "./events.js";
import { groupInviteOps } from "./group-invites.js";
import { groupOps } from "./groups.js";
import { createIdentityOps } from "./identities.js";
import { identityProviderOps } from "./identity-providers.js";
import { createLastOwnerGuard } from "./last-owner.js";
import { oauthOps } from "./oauth.js";
import type { Behaviour } from "./operation.js";
import { peopleOps } from "./people.js";
import { registryNameOps } from "./registry-namespaces.js";
import { repoOps } from "./repos.js";
import { createRoleBindingOps } from "./role-bindings.js";
import { roleOps } from "./roles.js";
import { createScimOps } from "./scim.js";
import { serverStateOps } from "./server-state.js";
import { signInUpkeepOps } from "./sign-in-upkeep.js";
import { subscriptionOps } from "./subscriptions.js";
import { tagOps } from "./tags.js";
import { teamOps } from "./teams.js";

/**
 * Every operation written once for both backends (ops/*.ts), by Store method, for a store
 * serving `roles` (the owner role, which the last-owner rule protects).
 */
export function createSharedOps(roles: Pick<StoreRoles, "ownerRoleUid">) {
  const lastOwner = createLastOwnerGuard(roles.ownerRoleUid);
  return {
    ...repoOps,
    ...registryNameOps,
    ...groupOps,
    ...identityProviderOps,
    ...accountAssociationOps,
    ...createIdentityOps(lastOwner),
    ...createRoleBindingOps(lastOwner),
    ...oauthOps,
    ...deviceCodeOps,
    ...peopleOps,
    ...tagOps,
    ...teamOps,
    ...roleOps,
    ...groupInviteOps,
    ...accessRequestOps,
    ...serverStateOps,
    ...signInUpkeepOps,
    ...advisoryOps,
    ...subscriptionOps,
    ...eventOps,
    ...createScimOps(roles.ownerRoleUid),
    ...createAccessQueries(),
  };
}

/** The shared operations, by name. */
export type SharedOps = ReturnType<typeof createSharedOps>;

/** The Store methods that are data operations (not the store's own lifecycle). */
export type DataOpName = Exclude<
  keyof Store,
  "ping" | "close" | "atomically" | "recording" | "accessCacheCounts"
>;

const read: Behaviour = { write: false };
const neutral: Behaviour = { write: true, accessNeutral: true };

/**
 * The behaviour of the operations each backend still writes on its own, until they move to
 * ops/: the compiler requires every such operation here, and refuses one that moved.
 */
const perBackend = {
  createGroup: { ...neutral, turn: (g: NewGroup) => rootOf(g.uid) },
  listGroups: read,
  // Each store resolves the shared timed access queries (ops/access.ts) at its clock.
  capabilitiesAt: read,
  groupsWithCapability: read,
} satisfies Record<Exclude<DataOpName, keyof SharedOps>, Behaviour>;

// Behaviour does not depend on the roles: any owner role uid gives the same.
const behaviours: Record<string, Behaviour> = {
  ...perBackend,
  ...createSharedOps({ ownerRoleUid: "" }),
};

/**
 * Whether the store operation `name` is a change an event records: a write (reads never are)
 * that is not bookkeeping (Behaviour.bookkeeping). Both stores' guards ask it, once per
 * operation, to know which calls made in an audit scope append the call's event.
 */
export function isAuditedWrite(name: string): boolean {
  const b = behaviourOf(name);
  return b.write && b.bookkeeping !== true;
}

/** The store operations that are changes an event records (isAuditedWrite), by name. */
export const auditedWrites: readonly string[] = Object.keys(behaviours).filter(isAuditedWrite);

/**
 * How the operation `name` runs, for both stores: whether it joins SQLite's group commit, and
 * whether it leaves the access caches warm (SQLite's and every PostgreSQL replica's).
 */
export function behaviourOf(name: string): Behaviour {
  const b = behaviours[name];
  if (!b) throw new Error(`store operation ${name} has no behaviour`);
  return b;
}
