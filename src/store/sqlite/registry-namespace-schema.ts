import type { Migration } from "./migrations.js";

/**
 * Registry namespaces and the organizations that hold them (ops/registry-namespaces.ts). Each
 * organization name existing at the upgrade is held by the oldest organization of that name
 * (first created; equal times by uid): exactly the organization the registry resolved it to
 * before, so no registry name changes owner on upgrade.
 */
export const registryNamespacesMigration: Migration = {
  description: "registry namespaces held by organizations",
  sql: `
    CREATE TABLE registry_namespaces (
      name TEXT PRIMARY KEY,
      org_uid TEXT NOT NULL REFERENCES groups (uid),
      claim_time INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX registry_namespaces_org ON registry_namespaces (org_uid);
    INSERT INTO registry_namespaces (name, org_uid, claim_time)
      SELECT name, uid, create_time FROM (
        SELECT name, uid, create_time,
          row_number() OVER (PARTITION BY name ORDER BY create_time, uid) AS n
        FROM groups WHERE parent_id IS NULL
      ) WHERE n = 1;
  `,
};
