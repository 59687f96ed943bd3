import type { Database } from "better-sqlite3";

/** One schema step. Steps are applied in order and never edited once released: append. */
export interface Migration {
  /** What the step adds, for error messages. */
  description: string;
  sql: string;
}

/**
 * The schema, as an ordered list of steps. `PRAGMA user_version` records how many have been
 * applied, so opening a database applies only the steps it has not seen.
 */
export const migrations: readonly Migration[] = [
  {
    description: "groups and their ancestor closure",
    // Roots store parent_uid NULL: the unique index then treats organizations as distinct (NULLs
    // never collide), so one organization's name never reveals another's, while siblings
    // below a group must differ in name.
    sql: `
      CREATE TABLE groups (
        uid TEXT PRIMARY KEY,
        parent_uid TEXT REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        verified INTEGER NOT NULL DEFAULT 0,
        resource_limits TEXT NOT NULL DEFAULT '{}',
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX groups_parent_name ON groups (parent_uid, name);
      CREATE INDEX groups_name ON groups (name, uid);
      CREATE INDEX groups_create_time ON groups (create_time, uid);
      CREATE INDEX groups_update_time ON groups (update_time, uid);

      CREATE TABLE group_closure (
        ancestor TEXT NOT NULL REFERENCES groups (uid),
        descendant TEXT NOT NULL REFERENCES groups (uid),
        depth INTEGER NOT NULL,
        PRIMARY KEY (ancestor, depth, descendant)
      ) STRICT, WITHOUT ROWID;
      CREATE UNIQUE INDEX group_closure_descendant ON group_closure (descendant, ancestor);
    `,
  },
  {
    description: "signing keys and server secrets",
    sql: `
      CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY,
        private_jwk TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        create_time INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE secrets (
        name TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) STRICT;
    `,
  },
];

/**
 * Bring the schema up to date: apply the steps beyond `PRAGMA user_version` in one immediate
 * transaction, so concurrent processes migrate once and a failed step leaves nothing behind.
 * Throws if the database is newer than this code.
 */
export function migrate(db: Database, steps: readonly Migration[] = migrations): void {
  db.transaction(() => {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > steps.length) {
      throw new Error(
        `database schema version ${version} is newer than this Gatehouse (${steps.length})`,
      );
    }
    for (const [i, step] of steps.entries()) {
      if (i < version) continue;
      try {
        db.exec(step.sql);
      } catch (err) {
        throw new Error(`migration ${i + 1} (${step.description}) failed`, { cause: err });
      }
      // user_version lives in the database header, which this transaction also covers.
      db.pragma(`user_version = ${i + 1}`);
    }
  }).immediate();
}
