import { randomBytes } from "node:crypto";
import pg from "pg";
import { expect, inject, onTestFinished } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The test run's PostgreSQL (test/setup/postgres.ts), as a superuser URL. */
    pgAdminUrl: string;
  }
}

/** A database this worker made, and whether a later test may have it (after a reset). */
interface Lease {
  name: string;
  migrated: boolean;
  free: boolean;
  /** The connection its resets run on, kept between them (see reset). */
  admin?: Promise<pg.Client> | undefined;
}

/** The file's migrated database, never handed out: the copy source, and what a reset restores. */
interface Template {
  name: string;
  /** Empty every table and put back the rows migrating and seeding left (roles, versions). */
  resetSql: string;
}

const leases: Lease[] = [];
let template: Promise<Template> | undefined;

/**
 * A database on the test run's PostgreSQL that no one else uses, for one test or one suite:
 * its URL. With `migrated` (the default) it is as the store leaves it on opening (migrated,
 * built-in roles seeded); without, it is empty.
 *
 * Asked for in a test (or its beforeEach), the database is this test's until it finishes; a
 * later test of the file then gets the same database back, emptied by TRUNCATE (a few
 * milliseconds, where making a database costs tens to hundreds under load). Asked for outside a
 * test (beforeAll, the module), it is the file's for good. Migrations run once per worker
 * (the postgres tier's files share theirs: vitest.config.ts), a later file's tests getting a
 * database an earlier file's test freed, as a later test of one file does.
 */
export async function newPgDatabase(opts: { migrated?: boolean } = {}): Promise<string> {
  const migrated = opts.migrated !== false;
  let lease = leases.find((l) => l.free && l.migrated === migrated);
  if (lease) {
    lease.free = false;
    await reset(lease);
  } else {
    const from = migrated ? (await migratedTemplate()).name : undefined;
    lease = { name: await createDatabase(from), migrated, free: false };
    leases.push(lease);
  }
  const held = lease;
  try {
    onTestFinished(() => {
      held.free = true;
    });
  } catch {
    // Not inside a test (beforeAll, module scope): the database serves the file to its end.
  }
  return urlOf(held.name);
}

function migratedTemplate(): Promise<Template> {
  template ??= (async () => {
    const name = await createDatabase();
    const store = await createPostgresStore(urlOf(name), { roles: storeRoles, listen: false });
    await store.close();
    return { name, resetSql: await withClient(urlOf(name), resetSqlOf) };
  })();
  return template;
}

/**
 * The reset of a migrated database, one round trip: every table emptied, identities restarted
 * (as in a new database), then the rows the template holds put back as they are there.
 *
 * DELETE rather than TRUNCATE: a test leaves a few rows in a few of the 24 tables, and
 * TRUNCATE gives every table and index a new file whether it holds rows or not (measured on
 * the test PostgreSQL under load: TRUNCATE of all tables 63-105 ms, DELETE from all 8-18 ms,
 * a new database from the template 140-440 ms).
 */
async function resetSqlOf(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`,
  );
  const tables = rows.map((r) => client.escapeIdentifier(r.name));
  // Foreign keys are enforced (and cascade) by triggers, off for the reset: tables empty and
  // fill in any order.
  const statements = [
    "BEGIN",
    "SET LOCAL session_replication_role = replica",
    ...tables.map((t) => `DELETE FROM ${t}`),
    `SELECT setval(s.seqrelid, s.seqstart, false) FROM pg_sequence s
     JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public'`,
  ];
  for (const table of tables) {
    const seeded = await client.query<{ rows: unknown }>(
      `SELECT json_agg(t) AS rows FROM ${table} t`,
    );
    const json = seeded.rows[0]?.rows;
    if (json == null) continue;
    statements.push(
      `INSERT INTO ${table} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::${table}, ${client.escapeLiteral(JSON.stringify(json))})`,
    );
  }
  statements.push("COMMIT");
  return statements.join(";\n");
}

/**
 * Empty a database a finished test had: first end whatever connection is still open on it (a
 * server or store the test left open must not write into the next test's data).
 */
async function reset(lease: Lease): Promise<void> {
  const sql = lease.migrated
    ? (await migratedTemplate()).resetSql
    : "DROP SCHEMA public CASCADE; CREATE SCHEMA public";
  const run = async () => {
    const client = await adminOf(lease);
    try {
      await client.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      await client.query(sql);
    } catch (err) {
      // Not used again: a test may have ended it (terminating its database's connections), or
      // the reset failed inside its transaction.
      lease.admin = undefined;
      client.end().catch(() => undefined);
      throw err;
    }
  };
  // Once more on a new connection: the one kept may have been ended since the last reset.
  await run().catch(run);
}

/**
 * The connection a lease's resets run on, opened at its first reset and kept: a connection
 * a reset cost each test about 25 ms (connect and end, load 8), of the 100-150 ms a test of
 * the store suite spends getting a database and opening a store.
 */
function adminOf(lease: Lease): Promise<pg.Client> {
  lease.admin ??= (async () => {
    const client = new pg.Client({ connectionString: urlOf(lease.name) });
    // Ended under it (a test terminating its database's connections): the next reset opens
    // another. Without a listener its error would end the worker.
    client.on("error", () => {
      lease.admin = undefined;
    });
    await client.connect();
    return client;
  })().catch((err: unknown) => {
    lease.admin = undefined;
    throw err;
  });
  return lease.admin;
}

async function createDatabase(from?: string): Promise<string> {
  const name = `gh_${randomBytes(6).toString("hex")}`;
  await withClient(adminUrl(), (client) =>
    client.query(`CREATE DATABASE ${name}${from ? ` TEMPLATE ${from}` : ""}`),
  );
  return name;
}

function adminUrl(): string {
  const admin = inject("pgAdminUrl");
  // A file in a tier that starts no PostgreSQL: fail, never skip (test/tiers.ts places a file
  // that imports this helper, or test-server's `backends` or `postgresBackend`, in the
  // postgres tier; this is for whatever got past it, such as `backend: "postgres"` spelled out).
  if (!admin) {
    throw new Error(
      `no PostgreSQL in this test tier: ${expect.getState().testPath ?? "this file"} needs one; ` +
        "import `backends` or `postgresBackend` from test/helpers/test-server.ts (or this " +
        "helper) for a server on it, so that test/tiers.ts puts the file in the postgres tier",
    );
  }
  return admin;
}

function urlOf(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
