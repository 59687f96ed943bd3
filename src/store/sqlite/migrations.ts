import type { Database } from "better-sqlite3";
import { type Migration, migrationsFor } from "../migrations.js";

export type { Migration };

/** The steps SQLite applies (src/store/migrations.ts): `PRAGMA user_version` counts them. */
export const migrations: readonly Migration[] = migrationsFor("sqlite");

/**
 * Bring the schema up to date: apply the steps beyond `PRAGMA user_version` in one immediate
 * transaction, so concurrent processes migrate once and a failed step leaves nothing behind.
 * Throws if the database is newer than this code.
 *
 * Foreign keys are off while the steps run (SQLite's procedure for rebuilding a table that
 * others reference: dropping the old one must not delete or refuse their rows), and every
 * key is checked before the commit: a step that breaks one fails the whole migration.
 * `PRAGMA foreign_keys` cannot change inside a transaction, so migrate is never called in one.
 */
export function migrate(db: Database, steps: readonly Migration[] = migrations): void {
  if (db.inTransaction) throw new Error("migrate cannot run inside a transaction");
  const enforced = db.pragma("foreign_keys", { simple: true }) === 1;
  if (enforced) db.pragma("foreign_keys = OFF");
  try {
    db.transaction(() => {
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version > steps.length) {
        throw new Error(
          `database schema version ${version} is newer than this Gatehouse (${steps.length})`,
        );
      }
      if (version === steps.length) return;
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
      const broken = db.pragma("foreign_key_check") as { table: string; parent: string }[];
      if (broken.length > 0) {
        const first = broken[0]!;
        throw new Error(
          `after migrating to version ${steps.length}, ${broken.length} rows break a foreign key (first: ${first.table} -> ${first.parent}); the migration was undone`,
        );
      }
    }).immediate();
  } finally {
    if (enforced) db.pragma("foreign_keys = ON");
  }
}
