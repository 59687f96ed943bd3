import { createInterner, timedGrantsOf } from "../access-answers.js";
import { column, read } from "./operation.js";

// A grant through a binding that expires comes back as `<value> <expire_time>` (neither a
// capability name nor a group uid holds a space): one text column, which SQLite hands over
// without a row object each, and the common answer, with no expiring binding, stays a set.
const grantOf = {
  sqlite: `CASE WHEN b.expire_time IS NULL THEN %s ELSE %s || ' ' || b.expire_time END`,
  pg: `CASE WHEN b.expire_time IS NULL THEN %s ELSE %s || ' ' || b.expire_time::text END`,
};
const granting = (dialect: keyof typeof grantOf, value: string) =>
  grantOf[dialect].replaceAll("%s", value);

/**
 * The access queries every authenticated call asks, written once, as timed grants: what lasts
 * until revoked and what lasts until a binding's expiry, so that an answer kept in a cache
 * still says when each part ends (access-answers.ts `resolveAt` compares it with the clock).
 * Each store answers them through its own access cache (sqlite/access.ts, postgres/access.ts),
 * which is where the backends really differ; identityExists is with the identities
 * (ops/identities.ts).
 */
export function createAccessQueries() {
  // One string per capability name for the sets the caches keep (access-answers.ts).
  const intern = createInterner();
  return {
    // Both start from the caller's bindings (the role_bindings_identity index, keyed by
    // identity then group), and from its teams' (team_members_identity, then the
    // role_bindings_team index), and read each bound role's capabilities by primary key:
    // built-in and custom roles alike. The groups are one parameter (a list), so the SQL has
    // one shape; each half of the UNION is an index walk of its own (UNION drops duplicates).
    timedCapabilitiesAt: read(function* (identityUid: string, groupUids: readonly string[]) {
      const found = yield* column<string>(
        {
          sqlite: `SELECT ${granting("sqlite", "c.capability")}
                   FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE b.identity_uid = ? AND b.group_uid IN (SELECT value FROM json_each(?))
                   UNION
                   SELECT ${granting("sqlite", "c.capability")}
                   FROM team_members AS m
                     JOIN role_bindings AS b ON b.team_uid = m.team_uid
                     JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE m.identity_uid = ? AND b.group_uid IN (SELECT value FROM json_each(?))`,
          pg: `SELECT ${granting("pg", "c.capability")}
               FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
               WHERE b.identity_uid = ? AND b.group_uid = ANY(?::text[])
               UNION
               SELECT ${granting("pg", "c.capability")}
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
      return timedGrantsOf(found, intern, (lasting) => new Set(lasting) as ReadonlySet<string>);
    }),

    timedGroupsWithCapability: read(function* (identityUid: string, capability: string) {
      const found = yield* column<string>(
        {
          sqlite: `SELECT ${granting("sqlite", "b.group_uid")}
                   FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE b.identity_uid = ? AND c.capability = ?
                   UNION
                   SELECT ${granting("sqlite", "b.group_uid")}
                   FROM team_members AS m
                     JOIN role_bindings AS b ON b.team_uid = m.team_uid
                     JOIN role_capabilities AS c ON c.role_uid = b.role_uid
                   WHERE m.identity_uid = ? AND c.capability = ?`,
          pg: `SELECT ${granting("pg", "b.group_uid")}
               FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
               WHERE b.identity_uid = ? AND c.capability = ?
               UNION
               SELECT ${granting("pg", "b.group_uid")}
               FROM team_members AS m
                 JOIN role_bindings AS b ON b.team_uid = m.team_uid
                 JOIN role_capabilities AS c ON c.role_uid = b.role_uid
               WHERE m.identity_uid = ? AND c.capability = ?`,
        },
        identityUid,
        capability,
        identityUid,
        capability,
      );
      return timedGrantsOf(
        found,
        (g) => g,
        (lasting) => Object.freeze([...lasting].sort()) as readonly string[],
      );
    }),
  };
}
