import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Sqlite from "better-sqlite3";
import { afterAll, expect, it } from "vitest";
import { migrate, migrations } from "../../src/store/sqlite/migrations.js";

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-namespaces-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const step = migrations.findIndex(
  (m) => m.description === "registry namespaces held by organizations",
);

it("gives each existing organization name's namespace to the oldest of that name", () => {
  expect(step).toBeGreaterThan(0);
  const db = new Sqlite(join(tmp, "gatehouse.db"));
  db.pragma("foreign_keys = ON");
  migrate(db, migrations.slice(0, step));
  const insert = db.prepare(
    `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
     VALUES (?, (SELECT id FROM groups WHERE uid = ?), ?, '', ?, ?)`,
  );
  const [a, b, c, d] = ["a", "b", "c", "d"].map((x) => x.repeat(40)) as [string, ...string[]];
  // b is older than a; c and d are as old as each other, so the uid decides (as the registry
  // resolved them before: by create time, then uid).
  insert.run(a, null, "acme", 20, 20);
  insert.run(b, null, "acme", 10, 10);
  insert.run(d, null, "globex", 5, 5);
  insert.run(c, null, "globex", 5, 5);
  insert.run(`${a}/${"1".repeat(16)}`, a, "team", 30, 30);
  migrate(db);
  expect(db.prepare("SELECT name, org_uid FROM registry_namespaces ORDER BY name").all()).toEqual([
    { name: "acme", org_uid: b },
    { name: "globex", org_uid: c },
  ]);
  db.close();
});

it("gives organizations named with spaces the namespace with '-', the oldest first", () => {
  const spaced = migrations.findIndex(
    (m) => m.description === "registry namespaces of organizations named with spaces",
  );
  expect(spaced).toBeGreaterThan(step);
  const db = new Sqlite(join(tmp, "spaces.db"));
  db.pragma("foreign_keys = ON");
  migrate(db, migrations.slice(0, spaced));
  const insert = db.prepare(
    `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
     VALUES (?, NULL, ?, '', ?, ?)`,
  );
  const [a, b, c] = ["a", "b", "c"].map((x) => x.repeat(40)) as [string, string, string];
  insert.run(a, "big corp", 20, 20);
  insert.run(b, "big corp", 10, 10);
  insert.run(c, "small-corp", 5, 5);
  db.prepare("INSERT INTO registry_namespaces (name, org_uid, claim_time) VALUES (?, ?, ?)").run(
    "small-corp",
    c,
    5,
  );
  insert.run("d".repeat(40), "small corp", 30, 30);
  migrate(db);
  expect(
    db
      .prepare("SELECT name, org_uid FROM registry_namespaces WHERE name LIKE '%-%' ORDER BY name")
      .all(),
  ).toEqual([
    { name: "big-corp", org_uid: b },
    { name: "small-corp", org_uid: c },
  ]);
  db.close();
});
