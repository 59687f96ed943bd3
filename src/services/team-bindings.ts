import type { Authorizer } from "../auth/authorizer.js";
import type { Principal } from "../auth/principal.js";
import { requireAll } from "../grants/grant-rule.js";
import type { RoleBindingRecord } from "../store/iam-store.js";
import type { Cursor, Store } from "../store/store.js";
import { identityBindings } from "./identity-bindings.js";

/** Every role binding of a team, in uid order, read a page of 200 at a time. */
export async function* teamBindings(
  store: Pick<Store, "listRoleBindings">,
  teamUid: string,
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
    yield* page.items;
    const last = page.items[page.items.length - 1];
    if (!page.hasMore || !last) return;
    after = { value: last.uid, uid: last.uid };
  }
}

/**
 * Every binding an identity holds: its own, then those of each team it is a member of whose
 * uid lies under `under` (an organization: what an explanation of access there reads).
 */
export async function* heldBindings(
  store: Pick<Store, "listRoleBindings" | "teamsOfIdentity">,
  identityUid: string,
  under: string,
): AsyncGenerator<RoleBindingRecord> {
  yield* identityBindings(store, identityUid);
  for (const team of await store.teamsOfIdentity(identityUid, under)) {
    yield* teamBindings(store, team.uid);
  }
}

/**
 * Throw PERMISSION_DENIED unless the caller holds, at every group where the team is bound,
 * every capability of the role bound there: adding a member grants the member all of it, so
 * it is a grant of those powers and needs them, like a binding does.
 */
export async function requireTeamPowers(
  authz: Authorizer,
  store: Pick<Store, "listRoleBindings" | "getRole">,
  principal: Principal,
  teamUid: string,
): Promise<void> {
  const roleCaps = new Map<string, readonly string[]>();
  for await (const b of teamBindings(store, teamUid)) {
    let caps = roleCaps.get(b.roleUid);
    if (!caps) {
      caps = (await store.getRole(b.roleUid))?.capabilities ?? [];
      roleCaps.set(b.roleUid, caps);
    }
    await requireAll(authz, principal, caps, b.groupUid);
  }
}
