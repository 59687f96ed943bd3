import type { RoleBindingFilters, RoleBindingRecord } from "../store/iam-store.js";
import type { Cursor, Store } from "../store/store.js";

/**
 * Every role binding `filters` select (an identity's, a team's), in uid order, read a page of
 * 200 at a time; given `now`, without those expired by then (they grant nothing, even before
 * the sweep removes them).
 */
export async function* bindingsOf(
  store: Pick<Store, "listRoleBindings">,
  filters: RoleBindingFilters,
  now?: number,
): AsyncGenerator<RoleBindingRecord> {
  let after: Cursor | undefined;
  for (;;) {
    const page = await store.listRoleBindings({
      filters,
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
