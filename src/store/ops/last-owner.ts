import { StoreError } from "../store.js";
import { one, type Steps } from "./operation.js";

/**
 * Keeps every organization with at least one owner binding at its root. Without one, no
 * identity could ever administer the organization again: no API call and no `gatehouse`
 * command can add a binding there. The checks run inside the transaction of the change; on
 * PostgreSQL, two replicas that delete an organization's last two owner bindings at once each
 * read the other's as still there, and the SERIALIZABLE transaction aborts one of them (its
 * retry then sees the other's delete and is refused).
 */
export interface LastOwnerGuard {
  /** Throw `failed_precondition` if binding `uid` is the only owner binding of its organization. */
  binding(uid: string): Steps<void>;
  /** Throw `failed_precondition` if identity `uid` is the only owner of some organization. */
  identity(uid: string): Steps<void>;
}

// An identity's owner binding at a root group (its uid has no '/') with no other identity's
// owner binding there. A team's owner binding counts for nothing: the team may be empty.
const sole = `b.role_uid = ? AND b.group_uid NOT LIKE '%/%' AND b.identity_uid IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM role_bindings AS o
                  WHERE o.group_uid = b.group_uid AND o.role_uid = ? AND o.uid <> b.uid
                    AND o.identity_uid IS NOT NULL)`;

/** The last-owner checks; `ownerRoleUid` is the owner role. */
export function createLastOwnerGuard(ownerRoleUid: string): LastOwnerGuard {
  function* check(column: "uid" | "identity_uid", uid: string): Steps<void> {
    const row = yield* one<{ group_uid: string }>(
      `SELECT b.group_uid FROM role_bindings AS b WHERE b.${column} = ? AND ${sole} LIMIT 1`,
      uid,
      ownerRoleUid,
      ownerRoleUid,
    );
    if (row) {
      throw new StoreError(
        "failed_precondition",
        `organization ${JSON.stringify(row.group_uid)} would have no owner left; bind another owner at it first`,
      );
    }
  }
  return { binding: (uid) => check("uid", uid), identity: (uid) => check("identity_uid", uid) };
}
