import type { Database } from "better-sqlite3";
import { capabilitiesKey, createInterner, groupsWithKey } from "../access-answers.js";
import type { ReadCache } from "./read-cache.js";
import type { SyncOps } from "./sync-ops.js";

/** The access queries of the SQLite store, which every authenticated call uses. */
export type AccessOps = SyncOps<"identityExists" | "capabilitiesAt" | "groupsWithCapability">;

/**
 * Create the access queries on an open, migrated database. Their answers go through `cache`,
 * which drops them whenever the database changes, so they are always current. `identityExists`
 * is the shared operation (ops/identities.ts), memoized here.
 */
export function createAccessOps(
  db: Database,
  cache: ReadCache,
  identityExists: (uid: string) => boolean,
): AccessOps {
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

  const intern = createInterner();

  return {
    identityExists: cache.memo("identityExists", identityExists, (uid) => uid),
    capabilitiesAt: cache.memo(
      "capabilitiesAt",
      (identityUid: string, groupUids: readonly string[]): ReadonlySet<string> =>
        new Set((at.all(identityUid, JSON.stringify(groupUids)) as string[]).map(intern)),
      capabilitiesKey,
    ),
    groupsWithCapability: cache.memo(
      "groupsWithCapability",
      (identityUid: string, capability: string): readonly string[] =>
        Object.freeze(groupsWith.all(identityUid, capability) as string[]),
      groupsWithKey,
    ),
  };
}
