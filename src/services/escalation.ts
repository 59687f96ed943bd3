import type { Authorizer } from "../auth/authorizer.js";
import type { Principal } from "../auth/principal.js";
import { requireAll } from "../grants/grant-rule.js";
import type { Store } from "../store/store.js";
import { heldBindings } from "./team-bindings.js";

/**
 * Throw PERMISSION_DENIED unless the caller holds, at every group where `identityUid` is
 * bound (itself or through a team), every capability the identity holds there. Changing how an identity authenticates
 * (its claimMatch or staticKeys) hands its powers to whoever matches the new rule, so it is a
 * grant of those powers and needs them, like a binding does.
 */
export async function requireIdentityPowers(
  authz: Authorizer,
  store: Pick<Store, "listRoleBindings" | "getRole" | "teamsOfIdentity">,
  principal: Principal,
  identityUid: string,
): Promise<void> {
  const roleCaps = new Map<string, readonly string[]>();
  // Its teams' bindings too: whoever matches the new rule is a member of its teams.
  for await (const b of heldBindings(store, identityUid, "")) {
    let caps = roleCaps.get(b.roleUid);
    if (!caps) {
      caps = (await store.getRole(b.roleUid))?.capabilities ?? [];
      roleCaps.set(b.roleUid, caps);
    }
    await requireAll(authz, principal, caps, b.groupUid);
  }
}
