import { randomBytes } from "node:crypto";
import pg from "pg";
import { expect, inject } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The test run's PostgreSQL (test/setup/postgres.ts), as a superuser URL. */
    pgAdminUrl: string;
  }
}

let template: Promise<string> | undefined;

/**
 * A new database on the test run's PostgreSQL, for one test or one suite: its URL. With
 * `migrated` (the default) it is a copy of a database this test process migrated once (a
 * template copy takes milliseconds where migrating takes a tenth of a second); without, it is
 * empty. Databases are left for the server's end (it lives in a temporary directory).
 */
export async function newPgDatabase(opts: { migrated?: boolean } = {}): Promise<string> {
  if (opts.migrated === false) return createDatabase();
  template ??= (async () => {
    const url = await createDatabase();
    const store = await createPostgresStore(url, { roles: storeRoles, listen: false });
    await store.close();
    return new URL(url).pathname.slice(1);
  })();
  return createDatabase(await template);
}

async function createDatabase(from?: string): Promise<string> {
  const admin = inject("pgAdminUrl");
  // A file in a tier that starts no PostgreSQL: fail, never skip (test/tiers.ts places a file
  // that imports this helper in the postgres tier; this is for whatever got past it).
  if (!admin) {
    throw new Error(
      `no PostgreSQL in this test tier: ${expect.getState().testPath ?? "this file"} needs one; ` +
        "see test/tiers.ts (tierSetup) for the tiers that start it",
    );
  }
  const name = `gh_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}${from ? ` TEMPLATE ${from}` : ""}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
