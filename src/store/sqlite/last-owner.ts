import type { Database } from "better-sqlite3";
import { StoreError } from "../store.js";

/**
 * Keeps every organization with at least one owner binding at its root. Without one, no
 * identity could ever administer the organization again: no API call and no `gatehouse`
 * command can add a binding there. The checks run inside the transaction of the change.
 */
export interface LastOwnerGuard {
  /** Throw `failed_precondition` if binding `uid` is the only owner binding of its organization. */
  binding(uid: string): void;
  /** Throw `failed_precondition` if identity `uid` is the only owner of some organization. */
  identity(uid: string): void;
}

/** Create the last-owner checks on an open, migrated database; `ownerRoleUid` is the owner role. */
export function createLastOwnerGuard(db: Database, ownerRoleUid: string): LastOwnerGuard {
  // An owner binding at a root group (its uid has no '/') with no other owner binding there.
  const sole = `
    b.role_uid = @owner AND instr(b.group_uid, '/') = 0
    AND NOT EXISTS (SELECT 1 FROM role_bindings AS o
                    WHERE o.group_uid = b.group_uid AND o.role_uid = @owner AND o.uid <> b.uid)`;
  const soleBinding = db
    .prepare(`SELECT b.group_uid FROM role_bindings AS b WHERE b.uid = @uid AND ${sole}`)
    .pluck();
  const soleOwnerOf = db
    .prepare(
      `SELECT b.group_uid FROM role_bindings AS b WHERE b.identity_uid = @uid AND ${sole} LIMIT 1`,
    )
    .pluck();
  const refuse = (org: string): never => {
    throw new StoreError(
      "failed_precondition",
      `organization ${JSON.stringify(org)} would have no owner left; bind another owner at it first`,
    );
  };
  return {
    binding(uid) {
      const org = soleBinding.get({ uid, owner: ownerRoleUid }) as string | undefined;
      if (org !== undefined) refuse(org);
    },
    identity(uid) {
      const org = soleOwnerOf.get({ uid, owner: ownerRoleUid }) as string | undefined;
      if (org !== undefined) refuse(org);
    },
  };
}
