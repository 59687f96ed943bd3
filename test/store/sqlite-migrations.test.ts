import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import Sqlite, { type Database } from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { migrate, migrations } from "../../src/store/sqlite/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { ListQuery, SortField } from "../../src/store/store.js";

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-migrations-"));
let files = 0;
const newPath = () => join(tmp, `db-${++files}`, "gatehouse.db");

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

// The step under test and the schema just before it.
const rebuild = migrations.findIndex(
  (m) => m.description === "groups keyed by their integer id, with integer parents",
);

/** A database at the schema before the groups rebuild, as `path`, with FKs as the store has them. */
function openOld(path: string): Database {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Sqlite(path);
  db.pragma("journal_mode = WAL");
  db.pragma("foreign_keys = ON");
  migrate(db, migrations.slice(0, rebuild));
  return db;
}

const seg = (c: string) => `/${c.repeat(16)}`;
const R = "a".repeat(40);
const A = R + seg("1");
const B = R + seg("2");
const C = A + seg("3");
const D = C + seg("4");
const person = "b".repeat(40);
const identity = C + seg("5");
const role = A + seg("6");
const binding = C + seg("7");
const ownerBinding = R + seg("8");
const repo = D + seg("9");
const tag = repo + seg("c");
const provider = B + seg("d");
const invite = A + seg("e");

// Ids unlike the rowids the rows get (the closure is keyed by id, and must stay so), two
// groups created at the same time (A and B, their ids in the other order than their uids, so
// that only the uid tie-break puts A first), and a name used twice in the tree (A and C).
const groups = [
  { uid: R, parent: null, id: 7, name: "acme", time: 10 },
  { uid: A, parent: R, id: 12, name: "eng", time: 20 },
  { uid: B, parent: R, id: 3, name: "ops", time: 20 },
  { uid: C, parent: A, id: 9, name: "eng", time: 30 },
  { uid: D, parent: C, id: 20, name: "deep", time: 40 },
] as const;

/** The closure rows the parent links imply, by uid. */
function impliedClosure() {
  const rows: { ancestor: string; descendant: string; depth: number }[] = [];
  for (const g of groups) {
    let depth = 0;
    for (let a: string | null = g.uid; a !== null; depth++) {
      rows.push({ ancestor: a, descendant: g.uid, depth });
      a = groups.find((x) => x.uid === a)!.parent;
    }
  }
  return rows;
}

const byKey = (r: { ancestor: string; descendant: string; depth: number }) =>
  `${r.ancestor} ${r.descendant} ${r.depth}`;

/** Write the tree and something of every kind that lives in a group, at the old schema. */
function fillOld(db: Database): void {
  const closure = impliedClosure();
  const idOf = (uid: string) => groups.find((g) => g.uid === uid)!.id;
  const groupRow = db.prepare(
    `INSERT INTO groups (uid, parent_uid, name, description, create_time, update_time,
       descendant_count, id) VALUES (?, ?, ?, 'd', ?, ?, ?, ?)`,
  );
  for (const g of groups) {
    const below = closure.filter((c) => c.ancestor === g.uid && c.depth > 0).length;
    groupRow.run(g.uid, g.parent, g.name, g.time, g.time + 1, below, g.id);
  }
  const closureRow = db.prepare("INSERT INTO group_closure VALUES (?, ?, ?)");
  for (const c of closure) closureRow.run(idOf(c.ancestor), idOf(c.descendant), c.depth);
  db.exec(`
    INSERT INTO identities (uid, group_uid, name, description, last_seen_time, create_time, update_time)
      VALUES ('${person}', NULL, 'P', '', 0, 1, 1), ('${identity}', '${C}', 'bot', '', 0, 1, 1);
    INSERT INTO roles (uid, group_uid, name, description, builtin, create_time, update_time)
      VALUES ('${role}', '${A}', 'reader', '', 0, 1, 1);
    INSERT INTO role_capabilities VALUES ('${role}', 'groups.get'), ('${role}', 'groups.list');
    INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time, update_time)
      VALUES ('${binding}', '${C}', '${identity}', '${role}', 1, 1),
        ('${ownerBinding}', '${R}', '${person}', '${role}', 1, 1);
    INSERT INTO repos (uid, group_uid, name, description, aliases, create_time, update_time)
      VALUES ('${repo}', '${D}', 'app', '', '[]', 1, 1);
    INSERT INTO tags (uid, repo_uid, group_uid, name, digest, deprecated, create_time, update_time)
      VALUES ('${tag}', '${repo}', '${D}', 'v1', 'sha256:00', 0, 1, 1);
    INSERT INTO identity_providers (uid, group_uid, name, description, default_role, oidc,
        client_secret, create_time, update_time)
      VALUES ('${provider}', '${B}', 'idp', '', '', '{"issuer":"https://idp","clientId":"c","additionalScopes":[],"groupsClaim":""}', 's', 1, 1);
    INSERT INTO account_associations (uid, name, description, create_time, update_time)
      VALUES ('${B}', 'ops account', '', 1, 1);
    INSERT INTO group_invites (uid, group_uid, role_uid, email, single_use, code_hash,
        expiration_time, create_time, update_time, creator_uid)
      VALUES ('${invite}', '${A}', '${role}', 'x@example.com', 1, 'hash', 99, 1, 1, '${person}');
    INSERT INTO advisories (uid, group_uid, advisory_id, aliases, summary, artifact_name,
        component_name, component_type, severities, events, latest_event_type, search,
        create_time, update_time)
      VALUES ('${D + seg("f")}', '${D}', 'GHSA-1', '[]', '', 'a', 'c', 't', '[]', '[]', 0,
        'ghsa-1', 1, 1);
  `);
}

const list = (q: Partial<ListQuery>, field: SortField = "create_time", desc = false) => ({
  filters: {},
  order: { field, desc },
  skip: 0,
  limit: 50,
  ...q,
});

describe("sqlite migration: groups keyed by their integer id", () => {
  it("finds the step under test by its description", () => {
    // Not found, it would be -1, and openOld would build everything but the last step.
    expect(migrations[rebuild]?.description).toMatch(/^groups keyed by their integer id/);
  });

  it("keeps every group, its tree and what refers to it, with foreign keys enforced", async () => {
    const path = newPath();
    const old = openOld(path);
    fillOld(old);
    expect(old.pragma("foreign_key_check")).toEqual([]);
    old.close();

    const store = createSqliteStore(path, { roles: storeRoles });
    try {
      const { db } = store;
      expect(db.pragma("user_version", { simple: true })).toBe(migrations.length);
      expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
      expect(db.pragma("foreign_key_check")).toEqual([]);
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");

      // The rows, as the API reads them.
      for (const g of groups) {
        expect(await store.getGroup(g.uid)).toEqual({
          uid: g.uid,
          parentUid: g.parent ?? "",
          name: g.name,
          description: "d",
          verified: false,
          resourceLimits: {},
          createTime: g.time,
          updateTime: g.time + 1,
        });
      }
      // The ids, and so the closure rows, are the ones the groups had.
      expect(db.prepare("SELECT uid, id FROM groups ORDER BY id").all()).toEqual(
        [...groups].sort((x, y) => x.id - y.id).map((g) => ({ uid: g.uid, id: g.id })),
      );
      const closure = db.prepare("SELECT * FROM group_closure_by_uid").all() as never[];
      expect(closure.map(byKey).sort()).toEqual(impliedClosure().map(byKey).sort());
      expect(db.prepare("SELECT * FROM group_parents ORDER BY uid").all()).toEqual(
        [...groups]
          .sort((x, y) => (x.uid < y.uid ? -1 : 1))
          .map((g) => ({ uid: g.uid, parent_uid: g.parent })),
      );
      expect(await store.getGroupPath(D)).toEqual([R, A, C, D]);

      // Lists: ties of time and name broken by uid, counts kept, children by parent id.
      const uids = async (q: Partial<ListQuery>, field?: SortField, desc?: boolean) =>
        (await store.listGroups(list(q, field, desc))).items.map((g) => g.uid);
      expect(await uids({ descendantsOf: R })).toEqual([A, B, C, D]);
      expect(await uids({ descendantsOf: R }, "create_time", true)).toEqual([D, C, B, A]);
      expect(await uids({ descendantsOf: R }, "name")).toEqual([D, A, C, B]);
      expect(await uids({ childrenOf: R }, "name", true)).toEqual([B, A]);
      expect(await uids({ childrenOf: A })).toEqual([C]);
      expect(await uids({ name: "eng" }, "update_time")).toEqual([A, C]);
      expect(await uids({ descendantsOf: R, after: { value: 20, uid: A } }, "create_time")).toEqual(
        [B, C, D],
      );
      expect((await store.listGroups(list({ descendantsOf: R }))).total).toBe(4);
      expect((await store.listGroups(list({ descendantsOf: A }))).total).toBe(2);

      // What lives in the groups, read through the views and tables that name groups.
      expect(await store.capabilitiesAt(identity, [R, A, C])).toEqual(
        new Set(["groups.get", "groups.list"]),
      );
      expect(await store.getRoleBinding(binding)).toMatchObject({
        groupUid: C,
        group: { uid: C, name: "eng", description: "d" },
        identityUid: identity,
        roleUid: role,
      });
      expect(await store.getIdentity(identity)).toMatchObject({ groupUid: C });
      expect(await store.getRole(role)).toMatchObject({ groupUid: A });
      expect(await store.getRepo(repo)).toMatchObject({ groupUid: D });
      expect(await store.getIdentityProvider(provider)).toMatchObject({ groupUid: B });
      expect(await store.getAccountAssociation(B)).toMatchObject({ name: "ops account" });
      expect(await store.getGroupInvite(invite)).toMatchObject({ groupUid: A, roleUid: role });

      // Foreign keys hold, to the new table, on every side.
      const fk = /FOREIGN KEY constraint failed/;
      expect(() =>
        db
          .prepare(
            `INSERT INTO identities (uid, group_uid, name, description, last_seen_time, create_time, update_time)
             VALUES (?, ?, 'x', '', 0, 1, 1)`,
          )
          .run(`${R}/${"0".repeat(16)}/${"0".repeat(16)}`, `${R}/${"0".repeat(16)}`),
      ).toThrow(fk);
      expect(() => db.prepare("DELETE FROM groups WHERE uid = ?").run(D)).toThrow(fk);
      expect(() =>
        db
          .prepare(
            `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
             VALUES (?, 999, 'x', '', 1, 1)`,
          )
          .run(B + seg("0")),
      ).toThrow(fk);
      expect(() => db.prepare("INSERT INTO group_closure VALUES (999, 999, 0)").run()).toThrow(fk);

      // The tree goes on growing and shrinking as before.
      await expect(store.deleteGroup(C)).rejects.toMatchObject({ kind: "not_empty" });
      await expect(
        store.createGroup({
          uid: R + seg("5"),
          parentUid: R,
          name: "eng",
          description: "",
          now: 50,
        }),
      ).rejects.toMatchObject({ kind: "already_exists" });
      const E = D + seg("6");
      await store.createGroup({ uid: E, parentUid: D, name: "leaf", description: "", now: 50 });
      expect(db.prepare("SELECT id FROM groups WHERE uid = ?").pluck().get(E)).toBe(21);
      expect(await store.getGroupPath(E)).toEqual([R, A, C, D, E]);
      expect((await store.listGroups(list({ descendantsOf: R }))).total).toBe(5);
      await expect(store.updateGroup(B, { name: "eng" }, 60)).rejects.toMatchObject({
        kind: "already_exists",
      });
      await expect(store.updateGroup(C, { name: "ops" }, 61)).resolves.toMatchObject({
        name: "ops",
        updateTime: 61,
      });
      await store.deleteGroup(E);
      expect((await store.listGroups(list({ descendantsOf: C }))).total).toBe(1);
      expect(db.pragma("foreign_key_check")).toEqual([]);

      // The schema names the new table and nothing of the old one.
      const schema = (
        db.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").all() as {
          name: string;
          sql: string;
        }[]
      )
        .map((r) => r.sql)
        .join("\n");
      expect(schema).not.toMatch(/groups_new|groups_id|parent_uid TEXT/);
      expect(schema).toMatch(/parent_id INTEGER REFERENCES "groups" \(id\)/);
    } finally {
      await store.close();
    }
  });

  it("refuses a tree whose parent links are broken, and leaves the database as it was", () => {
    const path = newPath();
    const old = openOld(path);
    fillOld(old);
    // A group whose parent is gone: only possible with foreign keys off.
    old.pragma("foreign_keys = OFF");
    old
      .prepare(
        `INSERT INTO groups (uid, parent_uid, name, description, create_time, update_time, id)
         VALUES (?, ?, 'lost', '', 1, 1, 30)`,
      )
      .run(`${R}${seg("0")}${seg("0")}`, `${R}${seg("0")}`);
    old.close();

    expect(() => createSqliteStore(path, { roles: storeRoles })).toThrow(/foreign key/);
    const db = new Sqlite(path);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(rebuild);
      expect(db.prepare("SELECT count(*) FROM groups").pluck().get()).toBe(groups.length + 1);
      expect(
        db.prepare("SELECT 1 FROM pragma_table_info('groups') WHERE name = 'parent_uid'").get(),
      ).toBeDefined();
    } finally {
      db.close();
    }
  });

  it("cannot run inside a transaction, where foreign keys cannot be turned off", () => {
    const db = new Sqlite(":memory:");
    db.exec("BEGIN");
    expect(() => migrate(db)).toThrow(/inside a transaction/);
    db.close();
  });
});
