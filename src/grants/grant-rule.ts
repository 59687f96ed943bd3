/**
 * The one rule for granting a role: who may grant which role where, through a binding, an
 * invite or an identity provider's default role. It lies below both auth/ (a sign-in grants a
 * provider's default role with its writer's authority) and services/ (the handlers that
 * grant), and imports neither: it asks what a principal holds through `HeldCapabilities`,
 * which auth/'s Authorizer is.
 */
import { ConnectError } from "@connectrpc/connect";
import { invalidField, permissionDenied } from "../errors.js";
import type { RoleRecord } from "../store/iam-store.js";
import type { Store } from "../store/store.js";
import { isAtOrBelow } from "../uid.js";

/** Who grants: the identity whose authority a grant is made with. */
export interface Granter {
  readonly identityUid: string;
}

/** What the rule asks of the authorizer: the capabilities a granter holds at a group. */
export interface HeldCapabilities {
  capabilitiesAt(granter: Granter, group: string): Promise<ReadonlySet<string>>;
}

/**
 * Throw PERMISSION_DENIED unless the caller holds every one of `capabilities` at `group`: no
 * one may grant (through a binding or a custom role) what they do not hold there themselves.
 */
export async function requireAll(
  authz: HeldCapabilities,
  granter: Granter,
  capabilities: readonly string[],
  group: string,
): Promise<void> {
  const held = await authz.capabilitiesAt(granter, group);
  const missing = capabilities.find((c) => !held.has(c));
  if (missing !== undefined) throw permissionDenied(missing);
}

/** The answer for a role that cannot be granted at a group, whether it exists or not. */
const unusableRole = "must be a built-in role or a role defined at or above the group";

/**
 * The one rule for granting a role at a group, through a binding, an invite or an identity
 * provider's default role: the role must be built in or defined at or above `group` (else
 * INVALID_ARGUMENT on `field`), and the granter must hold there `role_bindings.create` and
 * every capability of the role (else PERMISSION_DENIED). Returns the role.
 */
export async function requireGrantable(
  deps: { authorizer: HeldCapabilities; store: Pick<Store, "getRole"> },
  granter: Granter,
  roleUid: string,
  group: string,
  field = "roleUid",
): Promise<RoleRecord> {
  const role = await deps.store.getRole(roleUid);
  if (!role || !(role.builtin || isAtOrBelow(group, role.groupUid))) {
    throw invalidField(field, unusableRole);
  }
  await requireAll(deps.authorizer, granter, ["role_bindings.create", ...role.capabilities], group);
  return role;
}

/**
 * Whether `granterUid` still may grant `roleUid` at `group` (requireGrantable's rule), for
 * grants made later with an absent author's authority: an invite's creator, an identity
 * provider's writer. A grant whose author is unrecorded ("") or gone never may.
 */
export async function mayStillGrant(
  on: { authorizer: HeldCapabilities; store: Pick<Store, "getRole" | "identityExists"> },
  granterUid: string,
  roleUid: string,
  group: string,
): Promise<boolean> {
  if (granterUid === "" || !(await on.store.identityExists(granterUid))) return false;
  try {
    await requireGrantable(on, { identityUid: granterUid }, roleUid, group);
    return true;
  } catch (err) {
    if (err instanceof ConnectError) return false;
    throw err;
  }
}
