/**
 * Registry namespaces: the first component of a registry name (`acme` in `acme/app`) and the
 * organization that holds it. An organization takes the namespace of its name when it is
 * created or renamed while nobody holds it, and holds it until the organization is deleted;
 * a rename adds the new name's namespace and keeps the old one, so nothing ever moves a held
 * namespace to another organization (docs/registry.md "Names").
 */
import { type RepoRow, repoRecordOf } from "../rows/repo-rows.js";
import { StoreError } from "../store.js";
import { type OpsOf, one, read, run, type Steps } from "./operation.js";

/**
 * The registry name component of a group's name: its spaces as `-` (group names may hold
 * spaces, registry names may not). `acme corp` is addressed as `acme-corp`.
 */
export function registryComponentOf(groupName: string): string {
  return groupName.replaceAll(" ", "-");
}

/**
 * Take namespace `name` for organization `orgUid` if nobody holds it; leave it as it is
 * otherwise. The same statement on both backends: the primary key settles two concurrent
 * takers (PostgreSQL's serializable retry, or SQLite's one writer).
 */
export const claimNamespaceSql = `INSERT INTO registry_namespaces (name, org_uid, claim_time)
  VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`;

const holderOf = "SELECT org_uid FROM registry_namespaces WHERE name = ?";

/**
 * Take namespace `name` for `orgUid`, or throw `already_exists` if another organization
 * holds it: what a rename of an organization does before it changes the name.
 */
export function* mustHoldNamespace(name: string, orgUid: string, now: number): Steps<void> {
  yield* run(claimNamespaceSql, name, orgUid, now);
  const holder = yield* one<{ org_uid: string }>(holderOf, name);
  if (holder?.org_uid !== orgUid) {
    throw new StoreError(
      "already_exists",
      `the registry namespace ${JSON.stringify(name)} is held by another organization; ` +
        "an organization holds the namespace of its name from its creation until it is deleted",
    );
  }
}

/** Let go of every namespace `orgUid` holds: the organization is being deleted. */
export function* releaseNamespaces(orgUid: string): Steps<number> {
  return yield* run("DELETE FROM registry_namespaces WHERE org_uid = ?", orgUid);
}

// The chain of groups the name's middle components name, from the holding organization down
// (as deep as they match), then the repo of the first (highest) of them whose name is the
// rest of the registry name. `?` 2-4: the group names by depth (the component below depth d
// is element d): a component names the sibling of that exact name, else the one whose name
// has spaces where the component has `-` (registryComponentOf). `?` 5: the repo name each
// depth would hold. Indexed lookups (siblings by parent), one statement.
const resolveSql = {
  sqlite: `WITH RECURSIVE chain (id, uid, depth) AS (
      SELECT g.id, g.uid, 0 FROM registry_namespaces AS n JOIN groups AS g ON g.uid = n.org_uid
      WHERE n.name = ?
      UNION ALL
      SELECT g.id, g.uid, c.depth + 1 FROM chain AS c
      JOIN groups AS g ON g.parent_id = c.id AND (g.name = ? ->> c.depth
        OR (instr(g.name, ' ') > 0 AND replace(g.name, ' ', '-') = ? ->> c.depth
          AND NOT EXISTS (SELECT 1 FROM groups AS s
            WHERE s.parent_id = c.id AND s.name = ? ->> c.depth)))
    )
    SELECT r.* FROM chain AS c
    JOIN repos AS r ON r.group_uid = c.uid AND r.name = ? ->> c.depth
    ORDER BY c.depth LIMIT 1`,
  pg: `WITH RECURSIVE chain (uid, depth) AS (
      SELECT g.uid, 0 FROM registry_namespaces AS n JOIN groups AS g ON g.uid = n.org_uid
      WHERE n.name = ?
      UNION ALL
      SELECT g.uid, c.depth + 1 FROM chain AS c
      JOIN groups AS g ON g.parent_uid = c.uid AND (g.name = (?::text[])[c.depth + 1]
        OR (strpos(g.name, ' ') > 0 AND replace(g.name, ' ', '-') = (?::text[])[c.depth + 1]
          AND NOT EXISTS (SELECT 1 FROM groups AS s
            WHERE s.parent_uid = c.uid AND s.name = (?::text[])[c.depth + 1])))
    )
    SELECT r.* FROM chain AS c
    JOIN repos AS r ON r.group_uid = c.uid AND r.name = (?::text[])[c.depth + 1]
    ORDER BY c.depth LIMIT 1`,
};

/** Resolving registry names, on both backends. */
export const registryNameOps = {
  resolveRegistryName: read(function* (parts: readonly string[]) {
    if (parts.length < 2) return undefined;
    // A repo directly in the group at depth d is named by the components after d + 1; a
    // group at depth d + 1 by component d + 1, never the last (that is a repo's name at least).
    const groupNames = parts.slice(1, -1);
    const repoNames = parts.slice(1).map((_, d) => parts.slice(d + 1).join("/"));
    const row = yield* one<RepoRow>(
      resolveSql,
      parts[0]!,
      groupNames,
      groupNames,
      groupNames,
      repoNames,
    );
    return row && repoRecordOf(row);
  }),
} satisfies OpsOf<"resolveRegistryName">;
