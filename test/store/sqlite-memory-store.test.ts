import { describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { fromSqliteError } from "../../src/store/sqlite/from-sqlite-error.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { StoreError } from "../../src/store/store.js";
import { sqliteFixture } from "./sqlite-fixture.js";
import { runStoreSuite } from "./store-suite.js";

// The store contract on a private in-memory database, each test's its own (a copy of the one
// this process migrated first: sqlite-store.ts). On a file, with what only a file has (WAL,
// other connections, reopening, a first migration): sqlite-store.test.ts. Two files, so that
// two workers share the contract, this tier's largest (46 s in one file).
runStoreSuite("sqlite :memory:", async () =>
  sqliteFixture(createSqliteStore(":memory:", { roles: storeRoles })),
);

describe("fromSqliteError", () => {
  const driverError = (code: string) => Object.assign(new Error(code), { code });

  it.each([
    ["SQLITE_CONSTRAINT_UNIQUE", "already_exists"],
    ["SQLITE_CONSTRAINT_PRIMARYKEY", "already_exists"],
    ["SQLITE_CONSTRAINT_FOREIGNKEY", "failed_precondition"],
    ["SQLITE_BUSY", "unavailable"],
    ["SQLITE_BUSY_SNAPSHOT", "unavailable"],
    ["SQLITE_LOCKED", "unavailable"],
  ])("maps %s to %s, keeping the cause", (code, kind) => {
    const cause = driverError(code);
    const mapped = fromSqliteError(cause);
    expect(mapped).toBeInstanceOf(StoreError);
    expect(mapped).toMatchObject({ kind, cause });
  });

  it.each([
    ["a bug", driverError("SQLITE_ERROR")],
    ["a broken disk", driverError("SQLITE_IOERR")],
    ["not a driver error", new TypeError("x")],
  ])("leaves %s alone", (_what, err) => {
    expect(fromSqliteError(err)).toBe(err);
  });
});
