import type { Authorizer } from "../auth/authorizer.js";
import type { Principal } from "../auth/principal.js";
import { permissionDenied } from "../errors.js";
import type { Cursor, Store } from "../store/store.js";

/**
 * Throw PERMISSION_DENIED unless the caller holds every one of `capabilities` at `group`: no
 * one may grant (through a binding or a custom role) what they do not hold there themselves.
 */
export async function requireAll(
  authz: Authorizer,
  principal: Principal,
  capabilities: readonly string[],
  group: string,
): Promise<void> {
  const held = await authz.capabilitiesAt(principal, group);
  const missing = capabilities.find((c) => !held.has(c));
  if (missing !== undefined) throw permissionDenied(missing);
}

/**
 * Throw PERMISSION_DENIED unless the caller holds, at every group where `identityUid` is
 * bound, every capability the identity holds there. Changing how an identity authenticates
 * (its claimMatch or staticKeys) hands its powers to whoever matches the new rule, so it is a
 * grant of those powers and needs them, like a binding does.
 */
export async function requireIdentityPowers(
  authz: Authorizer,
  store: Pick<Store, "listRoleBindings" | "getRole">,
  principal: Principal,
  identityUid: string,
): Promise<void> {
  const roleCaps = new Map<string, readonly string[]>();
  let after: Cursor | undefined;
  for (;;) {
    const page = await store.listRoleBindings({
      filters: { identity: identityUid },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 200,
      ...(after ? { after } : {}),
    });
    for (const b of page.items) {
      let caps = roleCaps.get(b.roleUid);
      if (!caps) {
        caps = (await store.getRole(b.roleUid))?.capabilities ?? [];
        roleCaps.set(b.roleUid, caps);
      }
      await requireAll(authz, principal, caps, b.groupUid);
    }
    const last = page.items[page.items.length - 1];
    if (!page.hasMore || !last) return;
    after = { value: last.uid, uid: last.uid };
  }
}
