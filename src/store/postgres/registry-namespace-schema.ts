import type { PgMigration } from "./migrations.js";

/** As SQLite's (src/store/sqlite/registry-namespace-schema.ts): the oldest of a name holds it. */
export const pgRegistryNamespacesMigration: PgMigration = {
  description: "registry namespaces held by organizations",
  sql: `
    CREATE TABLE registry_namespaces (
      name TEXT COLLATE "C" PRIMARY KEY,
      org_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
      claim_time BIGINT NOT NULL
    );
    CREATE INDEX registry_namespaces_org ON registry_namespaces (org_uid);
    INSERT INTO registry_namespaces (name, org_uid, claim_time)
      SELECT DISTINCT ON (name) name, uid, create_time FROM groups
      WHERE parent_uid IS NULL ORDER BY name, create_time, uid;
  `,
};
