import { describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { newRootUid } from "../../src/uid.js";
import { newPgDatabase } from "../helpers/postgres.js";
import { runSharedDatabaseSuite } from "./shared-database-suite.js";
import { type ClosureRow, runStoreSuite, type StoreFixture } from "./store-suite.js";

function fixture(store: PostgresStore): StoreFixture {
  return {
    store,
    closureRows: () =>
      store.db.sql.rows<ClosureRow>("SELECT ancestor, descendant, depth FROM group_closure_by_uid"),
    dispose: () => store.close(),
  };
}

runStoreSuite("postgres", async () =>
  fixture(await createPostgresStore(await newPgDatabase(), { roles: storeRoles })),
);

// Each on a migrated database (a copy of the worker's template, or a freed one emptied) that
// both stores open at once, as replicas starting together do. Migrating a fresh database in
// every test of the suite cost each a CREATE DATABASE and two racing migrations (the suite's
// ten tests took 2.8-5.7 s each at load 20, where the single-store suite's took 0.3-3.3 s):
// that both stores migrate one fresh database at once is the test below, once.
runSharedDatabaseSuite(
  "postgres, two stores (replicas) on one database",
  async () => {
    const url = await newPgDatabase();
    const [a, b] = await Promise.all([
      createPostgresStore(url, { roles: storeRoles }),
      createPostgresStore(url, { roles: storeRoles }),
    ]);
    return {
      a,
      b,
      dispose: async () => {
        await a.close();
        await b.close();
      },
    };
    // The change feed's bound (docs/postgres.md): normally the NOTIFY's delivery, a few ms.
  },
  { accessLagMs: 1_500 },
);

describe("postgres stores starting together", () => {
  it("migrate one fresh database at once, and then share it", async () => {
    const url = await newPgDatabase({ migrated: false });
    const [a, b] = await Promise.all([
      createPostgresStore(url, { roles: storeRoles }),
      createPostgresStore(url, { roles: storeRoles }),
    ]);
    try {
      const uid = newRootUid();
      await a.createGroup({ uid, parentUid: "", name: "one", description: "", now: 1 });
      expect((await b.getGroup(uid))?.name).toBe("one");
      // The built-in roles seeded once, whichever store seeded them.
      const roles = await b.db.sql.rows<{ n: string }>("SELECT count(*) AS n FROM roles");
      expect(Number(roles[0]!.n)).toBe(storeRoles.builtins.length);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("postgres store's own refusals", () => {
  it("refuses text with a NUL character as invalid_text, reads and writes alike", async () => {
    const store = await createPostgresStore(await newPgDatabase(), { roles: storeRoles });
    try {
      const read = store.listRoleBindings({
        filters: { identity: "a\u0000b" },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      });
      await expect(read).rejects.toMatchObject({ kind: "invalid_text" });
      const write = store.createGroup({
        uid: "7".repeat(40),
        parentUid: "",
        name: "a\u0000b",
        description: "",
        now: 1,
      });
      await expect(write).rejects.toMatchObject({ kind: "invalid_text" });
    } finally {
      await store.close();
    }
  });
});
