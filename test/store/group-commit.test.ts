import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { StoreError } from "../../src/store/store.js";

// SQLite's group commit: writes that arrive together share one transaction and one commit,
// each is answered only after that commit, and one write's failure is its own.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-group-commit-"));
let n = 0;
let store: SqliteStore;
const R = "9".repeat(40);
const child = (i: number) => `${R}/${i.toString(16).padStart(16, "0")}`;

beforeEach(async () => {
  store = createSqliteStore(join(dir, `db-${++n}`, "gatehouse.db"), { roles: storeRoles });
  await store.createGroup({ uid: R, parentUid: "", name: "org", description: "", now: 1 });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await store.close();
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const create = (i: number, name = `g${i}`) =>
  store.createGroup({ uid: child(i), parentUid: R, name, description: "", now: 1 });

describe("group commit", () => {
  it("commits writes made together once, and answers each after the commit", async () => {
    const exec = vi.spyOn(store.db, "exec");
    const made = await Promise.all(Array.from({ length: 50 }, (_, i) => create(i)));
    expect(made.map((g) => g.uid)).toEqual(Array.from({ length: 50 }, (_, i) => child(i)));
    const commits = exec.mock.calls.filter(([sql]) => sql === "COMMIT").length;
    expect(commits).toBe(1);
    // Durable before answered: another connection on the file sees every one.
    const other = createSqliteStore(store.db.name, { roles: storeRoles });
    try {
      const page = await other.listGroups({
        childrenOf: R,
        filters: {},
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 100,
      });
      expect(page.total).toBe(50);
    } finally {
      await other.close();
    }
  });

  it("keeps one write's failure its own: the others of the batch commit", async () => {
    const results = await Promise.allSettled([create(1, "same"), create(2, "same"), create(3)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ kind: "already_exists" });
    expect(await store.getGroup(child(1))).toBeDefined();
    expect(await store.getGroup(child(2))).toBeUndefined();
    expect(await store.getGroup(child(3))).toBeDefined();
  });

  it("never acknowledges a write that a full disk undid with its batch", async () => {
    const pages = store.db.pragma("page_count", { simple: true }) as number;
    store.db.pragma(`max_page_count = ${pages + 2}`);
    const long = "x".repeat(900);
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => create(i, `${i}-${long}`)),
    );
    store.db.pragma("max_page_count = 1073741823");
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreError);
      expect((r as PromiseRejectedResult).reason).toMatchObject({ kind: "storage_full" });
    }
    for (const [i, r] of results.entries()) {
      const stored = await store.getGroup(child(i));
      expect({ i, stored: stored !== undefined }).toEqual({ i, stored: r.status === "fulfilled" });
    }
    expect(store.db.pragma("integrity_check", { simple: true })).toBe("ok");
  });
});
