import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import Sqlite from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { migrate, migrations } from "../../src/store/sqlite/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-events-id-"));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

// The step under test; the database is made at the schema just before it.
const step = migrations.findIndex(
  (m) => m.description === "events without an index on id; deliveries name their event's uid",
);

const org = "a".repeat(40);
const group = `${org}/${"1".repeat(16)}`;
const sub = `${org}/${"2".repeat(16)}`;
const eventId = "01a22139-d425-7683-81fc-359cf9b3c2c1";
const eventUid = `${group}/${eventId}`;
const type = "dev.gatehouse.iam.group.created.v1";
const data = JSON.stringify({ actor: { uid: org }, requestId: "r1", protocol: "connect" });

describe("sqlite migration: events without an index on id", () => {
  it("finds the step under test by its description", () => {
    expect(migrations[step]?.description).toMatch(/^events without an index on id/);
  });

  it("keeps each event, and a delivery pending from before still reads its event", async () => {
    const path = join(tmp, "old", "gatehouse.db");
    mkdirSync(dirname(path), { recursive: true });
    const old = new Sqlite(path);
    old.pragma("journal_mode = WAL");
    old.pragma("foreign_keys = ON");
    migrate(old, migrations.slice(0, step));
    old
      .prepare(
        `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
         VALUES (?, NULL, 'o', '', 1, 1)`,
      )
      .run(org);
    old
      .prepare(
        `INSERT INTO webhook_subscriptions (uid, group_uid, org_uid, name, description, sink,
           event_types, secret, create_time, update_time)
         VALUES (?, ?, ?, 'h', '', 'https://hooks.example.com/x', ?, 'whsec_test', 1, 1)`,
      )
      .run(sub, org, org, JSON.stringify([type]));
    old
      .prepare(
        `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
         VALUES (?, ?, ?, ?, '/gatehouse.iam.v2beta1.GroupsService', ?, 5, ?, ?)`,
      )
      .run(eventId, eventUid, org, type, group, org, data);
    // One delivery of that event, one of an event retention already pruned.
    const deliver = old.prepare(
      `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
       VALUES (?, ?, ?, 5)`,
    );
    deliver.run("d1", sub, eventId);
    deliver.run("d2", sub, "01a22139-d425-7000-8000-000000000000");
    old.close();

    const store = createSqliteStore(path, { roles: storeRoles });
    try {
      const { db } = store;
      expect(db.pragma("user_version", { simple: true })).toBe(migrations.length);
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      // The table's own indexes: the uid's (unique) and (time, uid); none on id.
      const indexes = db
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'")
        .all() as { name: string; sql: string | null }[];
      expect(indexes.map((i) => i.name).sort()).toEqual([
        "events_time_uid",
        "sqlite_autoindex_events_1",
      ]);
      const unique = db.prepare("PRAGMA index_info('sqlite_autoindex_events_1')").all();
      expect(unique).toEqual([expect.objectContaining({ name: "uid" })]);

      const claimed = await store.claimDeliveries({
        perOrganization: 100,
        perSubscription: 100,
        probeAfter: 5,
        now: 10,
        limit: 5,
        lease: "l",
        leaseUntil: 1000,
      });
      const byId = new Map(claimed.map((d) => [d.id, d]));
      expect(byId.get("d1")?.event).toEqual({
        id: eventId,
        type,
        source: "/gatehouse.iam.v2beta1.GroupsService",
        subject: group,
        time: 5,
        data,
      });
      expect(byId.get("d2")).toBeDefined();
      expect(byId.get("d2")?.event).toBeUndefined();

      // The event lists as before, and the seq it had is kept (retention prunes by it).
      const page = await store.listEvents({
        filters: {},
        order: { field: "create_time", desc: false },
        skip: 0,
        limit: 10,
      });
      expect(page.items.map((e) => e.uid)).toEqual([eventUid]);
      expect(db.prepare("SELECT seq FROM events").pluck().all()).toEqual([1]);
    } finally {
      await store.close();
    }
  });
});
