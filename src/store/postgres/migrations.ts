import { type Migration, migrationsFor } from "../migrations.js";
import type { PgDb } from "./pg-db.js";

/** One schema step as PostgreSQL applies it. */
export type PgMigration = Migration;

/** The steps PostgreSQL applies (src/store/migrations.ts): `gatehouse_schema` counts them. */
export const pgMigrations: readonly PgMigration[] = migrationsFor("pg");

/** The advisory lock key replicas take to migrate one at a time ("gatehous" in ASCII). */
const migrationLock = 0x6761746568_6f7573n.toString();

/**
 * Bring the schema up to date. Replicas starting together take a transaction-scoped advisory
 * lock first, so exactly one applies each step and the others find it done. Each step and its
 * version row commit together. Throws if the database is newer than this code.
 */
export async function migratePg(db: PgDb, steps: readonly PgMigration[] = pgMigrations) {
  // Not db.write: a migration is not retried blindly and changes no access answer; the lock
  // already serializes the migrators.
  await db.plain(async (sql) => {
    await sql.run("SELECT pg_advisory_xact_lock($1)", [migrationLock]);
    await sql.run(
      "CREATE TABLE IF NOT EXISTS gatehouse_schema (version INTEGER NOT NULL, apply_time BIGINT NOT NULL)",
    );
    const row = await sql.one<{ v: number }>(
      "SELECT COALESCE(MAX(version), 0)::int AS v FROM gatehouse_schema",
    );
    const version = row?.v ?? 0;
    if (version > steps.length) {
      throw new Error(
        `database schema version ${version} is newer than this Gatehouse (${steps.length})`,
      );
    }
    for (const [i, step] of steps.entries()) {
      if (i < version) continue;
      try {
        await sql.run(step.sql);
      } catch (err) {
        throw new Error(`migration ${i + 1} (${step.description}) failed`, { cause: err });
      }
      await sql.run("INSERT INTO gatehouse_schema (version, apply_time) VALUES ($1, $2)", [
        i + 1,
        Date.now(),
      ]);
    }
  });
}
