import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** The test run's PostgreSQL (test/global-setup.ts), as a superuser URL. */
    pgAdminUrl: string;
  }
}

/**
 * A new, empty database on the test run's PostgreSQL, for one test or one suite: its URL.
 * Databases are left for the server's end (it lives in a temporary directory).
 */
export async function newPgDatabase(): Promise<string> {
  const admin = inject("pgAdminUrl");
  const name = `gh_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
