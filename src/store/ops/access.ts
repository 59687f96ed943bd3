import { createInterner } from "../access-answers.js";
import { column, type OpsOf, read } from "./operation.js";

/**
 * The access queries every authenticated call asks, written once. Each store answers them
 * through its own access cache (sqlite/access.ts, postgres/access.ts), which is where the
 * backends really differ; identityExists is with the identities (ops/identities.ts).
 */
export function createAccessQueries() {
  // One string per capability name for the sets the caches keep (access-answers.ts).
  const intern = createInterner();
  return {
    // Both start from the caller's bindings (the role_bindings_identity index, keyed by
    // identity then group), and from its teams' (team_members_identity, then the
    // role_bindings_team index), and read each bound role's capabilities by primary key:
    // built-in and custom roles alike. The groups are one parameter (a list), so the SQL has
    // one shape; each half of the UNION is an index walk of its own.
    capabilitiesAt: read(function* (identityUid: string, groupUids: readonly string[]) {
      const found = yield* column<string>(
        {
          sqlite: `SELECT c.capability
                   FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE b.identity_uid = ? AND b.group_uid IN (SELECT value FROM json_each(?))
                   UNION
                   SELECT c.capability
                   FROM team_members AS m
                     JOIN role_bindings AS b ON b.team_uid = m.team_uid
                     JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE m.identity_uid = ? AND b.group_uid IN (SELECT value FROM json_each(?))`,
          pg: `SELECT c.capability
               FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
               WHERE b.identity_uid = ? AND b.group_uid = ANY(?::text[])
               UNION
               SELECT c.capability
               FROM team_members AS m
                 JOIN role_bindings AS b ON b.team_uid = m.team_uid
                 JOIN role_capabilities AS c ON c.role_uid = b.role_uid
               WHERE m.identity_uid = ? AND b.group_uid = ANY(?::text[])`,
        },
        identityUid,
        groupUids,
        identityUid,
        groupUids,
      );
      return new Set(found.map(intern)) as ReadonlySet<string>;
    }),

    groupsWithCapability: read(function* (identityUid: string, capability: string) {
      const found = yield* column<string>(
        `SELECT b.group_uid
         FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
         WHERE b.identity_uid = ? AND c.capability = ?
         UNION
         SELECT b.group_uid
         FROM team_members AS m
           JOIN role_bindings AS b ON b.team_uid = m.team_uid
           JOIN role_capabilities AS c ON c.role_uid = b.role_uid
         WHERE m.identity_uid = ? AND c.capability = ?
         ORDER BY 1`,
        identityUid,
        capability,
        identityUid,
        capability,
      );
      return Object.freeze(found) as readonly string[];
    }),
  } satisfies OpsOf<"capabilitiesAt" | "groupsWithCapability">;
}
