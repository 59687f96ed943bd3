/**
 * What a team's bindings grant its members, and the rule for giving someone that: below both
 * auth/ (a sign-in's group mappings add members) and services/ (the teams API), as the grant
 * rule is.
 */

import type { RoleBindingRecord } from "../store/iam-store.js";
import type { Cursor, Store } from "../store/store.js";
import { type Granter, type HeldCapabilities, requireAll } from "./grant-rule.js";

/**
 * Every role binding of a team, in uid order, read a page of 200 at a time; given `now`,
 * without those expired by then (they grant nothing, even before the sweep removes them).
 */
export async function* teamBindings(
  store: Pick<Store, "listRoleBindings">,
  teamUid: string,
  now?: number,
): AsyncGenerator<RoleBindingRecord> {
  let after: Cursor | undefined;
  for (;;) {
    const page = await store.listRoleBindings({
      filters: { team: teamUid },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 200,
      ...(after ? { after } : {}),
    });
    for (const b of page.items) {
      if (now === undefined || b.expireTime === undefined || b.expireTime > now) yield b;
    }
    const last = page.items[page.items.length - 1];
    if (!page.hasMore || !last) return;
    after = { value: last.uid, uid: last.uid };
  }
}

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
  for await (const b of teamBindings(store, teamUid)) {
    let caps = roleCaps.get(b.roleUid);
    if (!caps) {
      caps = (await store.getRole(b.roleUid))?.capabilities ?? [];
      roleCaps.set(b.roleUid, caps);
    }
    await requireAll(authz, granter, caps, b.groupUid);
  }
}
