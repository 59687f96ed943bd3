import type { Database } from "better-sqlite3";
import type { SyncOps } from "./sync-ops.js";

/** The two access queries of the SQLite store, which every authorization decision uses. */
export type AccessOps = SyncOps<"capabilitiesAt" | "groupsWithCapability">;

/** Create the access queries on an open, migrated database. */
export function createAccessOps(db: Database): AccessOps {
  // Both start from the caller's bindings (the role_bindings_identity index, keyed by
  // identity then group) and read each bound role's capabilities by primary key: built-in and
  // custom roles alike. The groups arrive as one JSON parameter, so the SQL has one shape.
  const at = db
    .prepare(
      `SELECT DISTINCT c.capability
       FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
       WHERE b.identity_uid = ? AND b.group_uid IN (SELECT value FROM json_each(?))`,
    )
    .pluck();
  const groupsWith = db
    .prepare(
      `SELECT DISTINCT b.group_uid
       FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
       WHERE b.identity_uid = ? AND c.capability = ?
       ORDER BY b.group_uid`,
    )
    .pluck();

  return {
    capabilitiesAt: (identityUid, groupUids) =>
      new Set(at.all(identityUid, JSON.stringify(groupUids)) as string[]),
    groupsWithCapability: (identityUid, capability) =>
      groupsWith.all(identityUid, capability) as string[],
  };
}
