import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import Sqlite from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole, storeRoles } from "../../src/auth/capabilities.js";
import { changeScope } from "../../src/events/audit-scope.js";
import type { AdvisoryContent } from "../../src/store/advisory-store.js";
import { migrate, migrations } from "../../src/store/sqlite/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { runSharedDatabaseSuite } from "./shared-database-suite.js";
import { sqliteFixture } from "./sqlite-fixture.js";
import { runStoreSuite, storeError } from "./store-suite.js";

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-store-"));
let files = 0;
const newPath = () => join(tmp, `db-${++files}`, "gatehouse.db");

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/**
 * A new path holding a copy of a file this store migrated and closed: opening it finds the
 * schema current and only seeds the built-in roles, as a server restarting finds its file.
 * Migrating a new file cost each test 70-150 ms (load 2-5), most of the contract's time;
 * migrating one from nothing is what the tests below and sqlite-migrations.test.ts look at.
 */
let migrated: Promise<string> | undefined;
async function migratedCopy(): Promise<string> {
  migrated ??= (async () => {
    const path = newPath();
    await createSqliteStore(path, { roles: storeRoles }).close();
    return path;
  })();
  const template = await migrated;
  const path = newPath();
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // The last connection's close checkpoints the WAL into the file and removes it; a WAL left
  // behind all the same is part of the database, copied with it.
  for (const suffix of ["", "-wal"]) {
    if (existsSync(template + suffix)) copyFileSync(template + suffix, path + suffix);
  }
  return path;
}

// The contract on a file, in WAL mode as the server has it (on a :memory: database:
// sqlite-memory-store.test.ts). Its commits do not wait for the disk (synchronous NORMAL, the
// setting's other value): no test of the contract can see whether a commit reached the disk,
// and waiting for it was most of the contract's time here (30-45 ms a commit at load 9).
// What FULL guarantees is crash-safety.test.ts's (SIGKILL mid-write) and the tests below.
runStoreSuite("sqlite file", async () =>
  sqliteFixture(
    createSqliteStore(await migratedCopy(), { roles: storeRoles, synchronous: "NORMAL" }),
  ),
);

const R1 = "1".repeat(40);
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const group = { uid: R1, parentUid: "", name: "acme", description: "", now: 1 };

describe("sqlite store", () => {
  it("creates the file's directory and opens it in WAL mode with durable settings", async () => {
    const path = newPath();
    const store = createSqliteStore(path, { roles: storeRoles });
    try {
      expect(existsSync(path)).toBe(true);
      const pragma = (name: string) => store.db.pragma(name, { simple: true });
      expect(pragma("journal_mode")).toBe("wal");
      expect(pragma("foreign_keys")).toBe(1);
      expect(pragma("synchronous")).toBe(2); // FULL
      expect(pragma("busy_timeout")).toBe(5000);
    } finally {
      await store.close();
    }
  });

  // Whether the touch itself skipped its fsync is not observable here (bench/RESULTS.md
  // measures it); what is pinned is that the relaxation never outlives the statement.
  it("records lastSeenTime and leaves synchronous = FULL for every other write", async () => {
    const store = createSqliteStore(await migratedCopy(), { roles: storeRoles });
    try {
      await store.createGroup(group);
      const uid = `${R1}/w`;
      await store.createIdentity({
        uid,
        groupUid: R1,
        name: "w",
        description: "",
        staticKeys: { issuer: "i", subject: "s", issuerKeys: "{}", expirationTime: 9 },
        now: 1,
      });
      await store.touchIdentity(uid, 42);
      expect((await store.getIdentity(uid))?.lastSeenTime).toBe(42);
      expect(store.db.pragma("synchronous", { simple: true })).toBe(2); // FULL again
      await expect(store.touchIdentity(`${R1}/gone`, 43)).rejects.toMatchObject({
        kind: "not_found",
      });
      expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
      // Inside a transaction SQLite refuses to change the setting ("Safety level may not be
      // changed inside a transaction"): the touch then commits with the transaction.
      await store.atomically((tx) => tx.touchIdentity(uid, 44));
      expect((await store.getIdentity(uid))?.lastSeenTime).toBe(44);
      expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
    } finally {
      await store.close();
    }
  });

  it("checkpoints the WAL from a background thread when asked to", async () => {
    // What the database file alone holds, without its WAL: what checkpoints have copied.
    const inFileAlone = (path: string, uid: string) => {
      const copy = `${path}.copy`;
      copyFileSync(path, copy);
      const db = new Sqlite(copy, { readonly: true });
      try {
        const tables = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'groups'").get();
        return (
          tables !== undefined &&
          db.prepare("SELECT 1 FROM groups WHERE uid = ?").get(uid) !== undefined
        );
      } finally {
        db.close();
        rmSync(copy);
      }
    };
    const waitFor = async (ok: () => boolean) => {
      for (const until = Date.now() + 5_000; Date.now() < until; ) {
        // A copy taken while the checkpoint thread writes the file can be torn ("malformed"):
        // that is the copy's fault, not the file's; look again.
        const torn = (err: unknown) => (err as { code?: string }).code === "SQLITE_CORRUPT";
        try {
          if (ok()) return true;
        } catch (err) {
          if (!torn(err)) throw err;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    };

    const plainPath = newPath();
    const plain = createSqliteStore(plainPath, { roles: storeRoles });
    await plain.createGroup(group);
    await new Promise((r) => setTimeout(r, 500));
    expect(inFileAlone(plainPath, R1)).toBe(false); // one write: SQLite's own threshold is far
    await plain.close();

    const path = newPath();
    const store = createSqliteStore(path, { roles: storeRoles, backgroundCheckpoints: {} });
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(10_000);
    await store.createGroup(group);
    expect(await waitFor(() => inFileAlone(path, R1))).toBe(true);
    await store.close();
  });

  it("keeps data and schema across close and reopen, migrating only once", async () => {
    const path = newPath();
    const first = createSqliteStore(path, { roles: storeRoles });
    await first.createGroup(group);
    const secret = await first.getOrCreateSecret("k", () => randomBytes(32));
    await first.close();
    for (let i = 0; i < 2; i++) {
      const again = createSqliteStore(path, { roles: storeRoles });
      expect(again.db.pragma("user_version", { simple: true })).toBe(migrations.length);
      expect(await again.getGroup(R1)).toMatchObject({ name: "acme" });
      expect((await again.getOrCreateSecret("k", () => randomBytes(32))).equals(secret)).toBe(true);
      await again.close();
    }
  });

  it("refuses a database whose schema is newer than the code", async () => {
    const path = newPath();
    const store = createSqliteStore(path, { roles: storeRoles });
    store.db.pragma(`user_version = ${migrations.length + 1}`);
    await store.close();
    expect(() => createSqliteStore(path, { roles: storeRoles })).toThrow(/newer/);
  });

  it("applies migration steps all or nothing", () => {
    const db = new Sqlite(":memory:");
    const steps = [
      { description: "good", sql: "CREATE TABLE a (x INTEGER)" },
      { description: "bad", sql: "CREATE TABLE oops (" },
    ];
    expect(() => migrate(db, steps)).toThrow(/migration 2 \(bad\)/);
    expect(db.pragma("user_version", { simple: true })).toBe(0);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'a'").get()).toBeUndefined();
    migrate(db, steps.slice(0, 1));
    expect(db.pragma("user_version", { simple: true })).toBe(1);
    db.close();
  });

  it("counts the descendants of groups made before the counts were kept", async () => {
    // A tree written by a Gatehouse whose schema stopped before the counts: a root with two
    // children, one of which has a child.
    const path = newPath();
    const before = migrations.findIndex((m) => m.description === "descendant counts of groups");
    expect(before).toBeGreaterThan(0);
    mkdirSync(dirname(path), { recursive: true });
    const old = new Sqlite(path);
    migrate(old, migrations.slice(0, before));
    const [a, b, c] = [`${R1}/a`, `${R1}/b`, `${R1}/a/c`];
    const groupRow = old.prepare(
      "INSERT INTO groups (uid, parent_uid, name, description, create_time, update_time) VALUES (?, ?, ?, '', 1, 1)",
    );
    const closureRow = old.prepare("INSERT INTO group_closure VALUES (?, ?, ?)");
    for (const [uid, parent] of [
      [R1, null],
      [a, R1],
      [b, R1],
      [c, a],
    ] as const) {
      groupRow.run(uid, parent, uid);
    }
    for (const [anc, desc, depth] of [
      [R1, R1, 0],
      [a, a, 0],
      [b, b, 0],
      [c, c, 0],
      [R1, a, 1],
      [R1, b, 1],
      [a, c, 1],
      [R1, c, 2],
    ] as const) {
      closureRow.run(anc, desc, depth);
    }
    old.close();
    const store = createSqliteStore(path, { roles: storeRoles });
    const query = (descendantsOf: string) => ({
      descendantsOf,
      order: { field: "uid" as const, desc: false },
      skip: 0,
      limit: 1,
      filters: {},
    });
    expect((await store.listGroups(query(R1))).total).toBe(3);
    expect((await store.listGroups(query(a))).total).toBe(1);
    expect((await store.listGroups(query(b))).total).toBe(0);
    await store.close();
  });

  it("fails every call after close with unavailable, and closes twice quietly", async () => {
    const store = createSqliteStore(":memory:", { roles: storeRoles });
    await store.close();
    await store.close();
    await storeError(() => store.ping(), "unavailable");
    await storeError(() => store.getGroup(R1), "unavailable");
    await storeError(() => store.createGroup(group), "unavailable");
    await storeError(() => store.getOrCreateSecret("k", () => randomBytes(1)), "unavailable");
  });

  it("turns a lock held past busy_timeout into unavailable", async () => {
    const path = await migratedCopy();
    const holder = createSqliteStore(path, { roles: storeRoles });
    const waiter = createSqliteStore(path, { roles: storeRoles, busyTimeoutMs: 50 });
    holder.db.exec("BEGIN IMMEDIATE");
    try {
      await storeError(() => waiter.createGroup(group), "unavailable");
    } finally {
      holder.db.exec("ROLLBACK");
    }
    await waiter.createGroup(group);
    await Promise.all([holder.close(), waiter.close()]);
  });

  it("waits for another connection's write lock before a recorded change, which reads first", async () => {
    const path = await migratedCopy();
    const s = createSqliteStore(path, { roles: storeRoles });
    await s.createGroup(group);
    // Another connection holds the write lock for a while from its own thread, as another
    // server on the file commits (a restart's overlap); this thread's busy handler waits.
    const holder = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       const db = new (require(workerData.driver))(workerData.path);
       db.exec("BEGIN IMMEDIATE");
       parentPort.postMessage("locked");
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
       db.exec("ROLLBACK");
       db.close();`,
      {
        eval: true,
        workerData: { path, driver: createRequire(import.meta.url).resolve("better-sqlite3") },
      },
    );
    await once(holder, "message");
    const call = changeScope({
      type: "dev.gatehouse.iam.group.created.v1",
      source: "/t",
      actorUid: "4".repeat(40),
    });
    // Its checks read before it writes: begun deferred, the write lock was asked for inside
    // an open transaction, and SQLite refused it at once (SQLITE_BUSY, no busy handler).
    const made = await s
      .recording(call)
      .createGroup({ ...group, uid: `${R1}/0000000000000009`, parentUid: R1, name: "waited" });
    expect(made.name).toBe("waited");
    await once(holder, "exit");
    await s.close();
  });

  it("agrees on one secret across connections to one file", async () => {
    const path = await migratedCopy();
    const a = createSqliteStore(path, { roles: storeRoles });
    const b = createSqliteStore(path, { roles: storeRoles });
    const [x, y] = await Promise.all([
      a.getOrCreateSecret("page-token-key", () => randomBytes(32)),
      b.getOrCreateSecret("page-token-key", () => randomBytes(32)),
    ]);
    expect(x.equals(y)).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  const advisory = (advisoryId: string): AdvisoryContent => ({
    advisoryId,
    aliases: ["CVE-1"],
    summary: "",
    artifactName: "",
    componentName: "",
    componentType: "",
    severities: [],
    events: [],
  });

  /** A new store in which `person` owns organization R1 (binding `${R1}/b`). */
  async function storeOwnedBy(person: string) {
    const s = createSqliteStore(await migratedCopy(), { roles: storeRoles });
    await s.upsertPerson({ uid: person, issuer: "i", subject: "s", name: "P", email: "", now: 1 });
    await s.createOrganization(group, {
      bindingUid: `${R1}/b`,
      identityUid: person,
      roleUid: ownerRole.uid,
    });
    return s;
  }

  it("keeps its access answers across group, repo, tag and advisory writes, but not across a new binding", async () => {
    const person = "6".repeat(40);
    const s = await storeOwnedBy(person);
    const first = await s.capabilitiesAt(person, [R1]);
    const where = await s.groupsWithCapability(person, "groups.list");
    const repo = `${R1}/00000000000000a1`;
    const tag = `${repo}/00000000000000b1`;
    const digest = `sha256:${"1".repeat(64)}`;
    // Every write that sqlite-store.ts names access-neutral, one at a time.
    const writes: [string, () => Promise<unknown>][] = [
      [
        "createGroup",
        () =>
          s.createGroup({
            uid: `${R1}/0000000000000001`,
            parentUid: R1,
            name: "a",
            description: "",
            now: 2,
          }),
      ],
      ["updateGroup", () => s.updateGroup(`${R1}/0000000000000001`, { name: "b" }, 3)],
      [
        "createRepo",
        () =>
          s.createRepo({
            uid: repo,
            groupUid: R1,
            name: "app",
            description: "",
            aliases: [],
            now: 3,
          }),
      ],
      ["updateRepo", () => s.updateRepo(repo, { description: "the app" }, 3)],
      ["putTag", () => s.putTag(repo, { name: "v1", digest, deprecated: false }, () => tag, 3)],
      [
        "importTags",
        () =>
          s.importTags(
            repo,
            [{ name: "v2", digest, deprecated: true }],
            () => `${repo}/00000000000000b2`,
            3,
          ),
      ],
      ["deleteTag", () => s.deleteTag(tag)],
      ["deleteTag", () => s.deleteTag(`${repo}/00000000000000b2`)],
      ["deleteRepo", () => s.deleteRepo(repo)],
      ["createAdvisory", () => s.createAdvisory(`${R1}/00000000000000c1`, R1, advisory("A-1"), 3)],
      ["updateAdvisory", () => s.updateAdvisory(`${R1}/00000000000000c1`, { summary: "s" }, 3)],
      [
        "importAdvisories",
        () => s.importAdvisories(R1, [advisory("A-2")], () => `${R1}/00000000000000c2`, 3),
      ],
      ["deleteAdvisory", () => s.deleteAdvisory(`${R1}/00000000000000c1`)],
    ];
    for (const [name, write] of writes) {
      await write();
      // The very same answers: the write cannot change one.
      expect(await s.capabilitiesAt(person, [R1]), name).toBe(first);
      expect(await s.groupsWithCapability(person, "groups.list"), name).toBe(where);
    }
    // A new organization is a group and a binding in one transaction: the binding counts.
    const R2 = "5".repeat(40);
    await s.createOrganization(
      { uid: R2, name: "two", description: "", now: 4 },
      { bindingUid: `${R2}/b`, identityUid: person, roleUid: ownerRole.uid },
    );
    expect(await s.groupsWithCapability(person, "groups.list")).toEqual([R1, R2].sort());
    // A binding removed behind the store's back, then a create: the removal still counts.
    s.db.prepare("DELETE FROM role_bindings WHERE uid = ?").run(`${R1}/b`);
    await s.createGroup({
      uid: `${R2}/0000000000000002`,
      parentUid: R2,
      name: "c",
      description: "",
      now: 5,
    });
    expect(await s.capabilitiesAt(person, [R1])).toEqual(new Set());
    await s.close();
  });

  it("keeps its access answers across a call's access-neutral write and its event", async () => {
    const person = "4".repeat(40);
    const s = await storeOwnedBy(person);
    const first = await s.capabilitiesAt(person, [R1]);
    const call = () =>
      changeScope({ type: "dev.gatehouse.iam.group.created.v1", source: "/t", actorUid: person });
    await s.recording(call()).createGroup({
      uid: `${R1}/0000000000000003`,
      parentUid: R1,
      name: "audited",
      description: "",
      now: 2,
    });
    const page = { filters: {}, order: { field: "uid", desc: false }, skip: 0, limit: 10 } as const;
    expect((await s.listEvents(page)).items.map((e) => e.subject)).toEqual([
      `${R1}/0000000000000003`,
    ]);
    // The very same answer: neither the group nor its event (and its outbox) can change it.
    expect(await s.capabilitiesAt(person, [R1])).toBe(first);
    // A binding made for a call, with its event: that one counts (the answer is asked again).
    const viewer = builtinRoles.find((r) => r.name === "viewer")!;
    await s.recording(call()).createRoleBinding({
      uid: `${R1}/v`,
      groupUid: R1,
      identityUid: person,
      roleUid: viewer.uid,
      now: 3,
    });
    expect((await s.listEvents(page)).total).toBe(2);
    const again = await s.capabilitiesAt(person, [R1]);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    await s.close();
  });

  it("keeps its access answers across lastSeenTime writes, but not across any other write", async () => {
    const person = "7".repeat(40);
    const s = await storeOwnedBy(person);
    const first = await s.capabilitiesAt(person, [R1]);
    await s.touchIdentity(person, 2);
    // The very same answer: the exchange's write did not empty the cache.
    expect(await s.capabilitiesAt(person, [R1])).toBe(first);
    // A write the cache has not seen yet, then a lastSeenTime write: the first still counts.
    s.db.prepare("DELETE FROM role_bindings WHERE uid = ?").run(`${R1}/b`);
    await s.touchIdentity(person, 3);
    expect(await s.capabilitiesAt(person, [R1])).toEqual(new Set());
    await s.close();
  });

  it("answers access queries with another connection's writes at once", async () => {
    // `server` has answered (and may have cached) before `cli`, as a CLI command would,
    // writes to the same file.
    const path = await migratedCopy();
    const server = createSqliteStore(path, { roles: storeRoles });
    const cli = createSqliteStore(path, { roles: storeRoles });
    const person = "9".repeat(40);
    const person2 = "8".repeat(40);
    expect(await server.identityExists(person)).toBe(false);
    expect(await server.capabilitiesAt(person, [R1])).toEqual(new Set());
    expect(await server.groupsWithCapability(person, "groups.list")).toEqual([]);
    await cli.upsertPerson({
      uid: person,
      issuer: "i",
      subject: "s",
      name: "P",
      email: "",
      now: 1,
    });
    await cli.createOrganization(group, {
      bindingUid: `${R1}/b`,
      identityUid: person,
      roleUid: ownerRole.uid,
    });
    expect(await server.identityExists(person)).toBe(true);
    expect(await server.capabilitiesAt(person, [R1])).toEqual(new Set(ownerRole.capabilities));
    expect(await server.groupsWithCapability(person, "groups.list")).toEqual([R1]);
    // A write that only another connection saw, followed by one of the server's own.
    await cli.upsertPerson({
      uid: person2,
      issuer: "i",
      subject: "t",
      name: "Q",
      email: "",
      now: 1,
    });
    await cli.createRoleBinding({
      uid: `${R1}/v`,
      groupUid: R1,
      identityUid: person2,
      roleUid: viewer.uid,
      now: 1,
    });
    expect(await server.capabilitiesAt(person2, [R1])).toEqual(new Set(viewer.capabilities));
    await cli.deleteRoleBinding(`${R1}/v`);
    expect(await server.capabilitiesAt(person2, [R1])).toEqual(new Set());
    expect(await server.identityExists(person2)).toBe(true);
    await server.deleteIdentity(person2);
    expect(await cli.identityExists(person2)).toBe(false);
    expect(await server.identityExists(person2)).toBe(false);
    await Promise.all([server.close(), cli.close()]);
  });
});

runSharedDatabaseSuite(
  "sqlite file, two connections",
  async () => {
    const path = await migratedCopy();
    const a = createSqliteStore(path, { roles: storeRoles });
    const b = createSqliteStore(path, { roles: storeRoles });
    return {
      a,
      b,
      dispose: async () => {
        await a.close();
        await b.close();
      },
    };
  },
  // SQLite checks the database's change counters before every cached answer.
  { accessLagMs: 0 },
);
