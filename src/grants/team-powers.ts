/**
 * What a team's bindings grant its members, and the rule for giving someone that: below both
 * auth/ (a sign-in's group mappings add members) and services/ (the teams API), as the grant
 * rule is.
 */

import type { Store } from "../store/store.js";
import { bindingsOf } from "./bindings-of.js";
import { type Granter, type HeldCapabilities, requireAll } from "./grant-rule.js";

/**
 * Throw PERMISSION_DENIED unless the caller holds, at every group where the team is bound,
 * every capability of the role bound there: adding a member grants the member all of it, so
 * it is a grant of those powers and needs them, like a binding does.
 */
export async function requireTeamPowers(
  authz: HeldCapabilities,
  store: Pick<Store, "listRoleBindings" | "getRole">,
  granter: Granter,
  teamUid: string,
): Promise<void> {
  const roleCaps = new Map<string, readonly string[]>();
  for await (const b of bindingsOf(store, { team: teamUid })) {
    let caps = roleCaps.get(b.roleUid);
    if (!caps) {
      caps = (await store.getRole(b.roleUid))?.capabilities ?? [];
      roleCaps.set(b.roleUid, caps);
    }
    await requireAll(authz, granter, caps, b.groupUid);
  }
}
