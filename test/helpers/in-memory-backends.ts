import { storeRoles } from "../../src/auth/capabilities.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { StoreFactory } from "./in-memory.js";
import { newPgDatabase } from "./postgres.js";

// The API in memory on either backend (in-memory.ts takes the store this makes). Importing
// `backends` or `storeOn` from here is what puts a test file in the postgres tier, which
// starts the run's PostgreSQL (test/tiers.ts): the API needs no socket, PostgreSQL does.

/** The store backends a suite runs against when it runs against each. */
export const backends = ["sqlite", "postgres"] as const;
/** One store backend. */
export type Backend = (typeof backends)[number];

/**
 * The store of `backend` for startInMemory/useInMemory's `store`: SQLite in memory, or a fresh
 * database of the run's PostgreSQL, as startTestServer makes them.
 */
export function storeOn(backend: Backend): StoreFactory {
  return async ({ config, now }) => {
    const clock = now ? { now } : {};
    if (backend === "sqlite") return createSqliteStore(":memory:", { roles: storeRoles, ...clock });
    return createPostgresStore(await newPgDatabase(), {
      roles: storeRoles,
      timeoutMs: config.dbTimeoutMs,
      ...clock,
    });
  };
}
