import { bindingsOf } from "../grants/bindings-of.js";
import type { RoleBindingRecord } from "../store/iam-store.js";
import type { Store } from "../store/store.js";

/**
 * Every binding an identity holds: its own, then those of each team it is a member of whose
 * uid lies under `under` (an organization: what an explanation of access there reads); given
 * `now`, without those expired by then.
 */
export async function* heldBindings(
  store: Pick<Store, "listRoleBindings" | "teamsOfIdentity">,
  identityUid: string,
  under: string,
  now?: number,
): AsyncGenerator<RoleBindingRecord> {
  yield* bindingsOf(store, { identity: identityUid }, now);
  for (const team of await store.teamsOfIdentity(identityUid, under)) {
    yield* bindingsOf(store, { team: team.uid }, now);
  }
}
