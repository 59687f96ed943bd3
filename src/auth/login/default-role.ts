import { mayStillGrant } from "../../grants/grant-rule.js";
import type { IdentityProviderRecord } from "../../store/iam-store.js";
import { type Store, StoreError } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import { createAuthorizer } from "../authorizer.js";

/** What a default-role grant needs. */
export interface DefaultRoleDeps {
  store: Store;
  now: () => number;
  /** Told why a role was not granted: reasons and uids only. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/**
 * Grant an organization provider's default role at its group to a person who just signed in
 * through it, with the authority of the provider's writer, as an invite grants with its
 * creator's: the check and the binding commit together, so a writer who lost the right to
 * grant the role (or is gone) grants nothing from that moment. The sign-in itself stands
 * either way. Returns whether the person holds the binding afterwards.
 */
export async function grantDefaultRole(
  deps: DefaultRoleDeps,
  identityUid: string,
  idp: IdentityProviderRecord,
): Promise<boolean> {
  const { store, now, log } = deps;
  try {
    // The authorizer reads through the transaction: the writer's authority is checked as it
    // stands when the binding commits (as services/atomic.ts does for the handlers).
    return await store.atomically(async (tx) => {
      const authorizer = createAuthorizer(tx);
      const current = await tx.getIdentityProvider(idp.uid);
      if (!current || current.defaultRole === "") return false;
      const on = { store: tx, authorizer };
      if (!(await mayStillGrant(on, current.writerUid, current.defaultRole, current.groupUid))) {
        log({ provider: idp.uid, reason: "writer_may_not_grant" }, "default role not granted");
        return false;
      }
      await tx.createRoleBinding({
        uid: newChildUid(current.groupUid),
        groupUid: current.groupUid,
        identityUid,
        roleUid: current.defaultRole,
        now: now(),
      });
      return true;
    });
  } catch (err) {
    // Bound already; or the role went away since: the sign-in itself stands.
    if (!(err instanceof StoreError)) throw err;
    if (err.kind === "already_exists") return true;
    log({ provider: idp.uid, reason: err.kind }, "default role not granted");
    return false;
  }
}
