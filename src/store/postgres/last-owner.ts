import { StoreError } from "../store.js";
import type { Sql } from "./pg-db.js";

/**
 * Keeps every organization with at least one owner binding at its root (see the SQLite
 * guard). The checks run inside the SERIALIZABLE transaction of the change: two replicas that
 * delete an organization's last two owner bindings at once each read the other's as still
 * there, and PostgreSQL aborts one of the two (a serialization failure); its retry then sees
 * the other's delete and is refused.
 */
export interface PgLastOwnerGuard {
  /** Throw `failed_precondition` if binding `uid` is the only owner binding of its organization. */
  binding(sql: Sql, uid: string): Promise<void>;
  /** Throw `failed_precondition` if identity `uid` is the only owner of some organization. */
  identity(sql: Sql, uid: string): Promise<void>;
}

/** Create the last-owner checks; `ownerRoleUid` is the owner role. */
export function createPgLastOwnerGuard(ownerRoleUid: string): PgLastOwnerGuard {
  // An owner binding at a root group (its uid has no '/') with no other owner binding there.
  const sole = `
    b.role_uid = $2 AND strpos(b.group_uid, '/') = 0
    AND NOT EXISTS (SELECT 1 FROM role_bindings AS o
                    WHERE o.group_uid = b.group_uid AND o.role_uid = $2 AND o.uid <> b.uid)`;
  const refuse = (org: string): never => {
    throw new StoreError(
      "failed_precondition",
      `organization ${JSON.stringify(org)} would have no owner left; bind another owner at it first`,
    );
  };
  return {
    async binding(sql, uid) {
      const row = await sql.one<{ group_uid: string }>(
        `SELECT b.group_uid FROM role_bindings AS b WHERE b.uid = $1 AND ${sole}`,
        [uid, ownerRoleUid],
      );
      if (row) refuse(row.group_uid);
    },
    async identity(sql, uid) {
      const row = await sql.one<{ group_uid: string }>(
        `SELECT b.group_uid FROM role_bindings AS b WHERE b.identity_uid = $1 AND ${sole} LIMIT 1`,
        [uid, ownerRoleUid],
      );
      if (row) refuse(row.group_uid);
    },
  };
}
