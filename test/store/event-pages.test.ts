import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import type { EventFilters } from "../../src/store/event-store.js";
import { createSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { ListQuery } from "../../src/store/store.js";

// A page of the audit trail costs the page, not the range it pages through: SQLite's plan of
// listEvents' page seeks to the cursor in the (time, uid) order and walks no further than the
// page (no sort of the range), its count reads only that index, and an export's walk (noTotal)
// counts nothing. The plans are SQLite's own EXPLAIN QUERY PLAN of the statements the store
// runs, with the parameters it binds; the pages are checked against the seeded events.

const orgA = "a".repeat(16);
const orgB = "b".repeat(16);
const t0 = Date.UTC(2026, 10, 1);
const perOrg = 300;

type Traced = { text: string; params: unknown[] };

describe("listEvents pages on sqlite", () => {
  let store: SqliteStore;
  const seen: Traced[] = [];

  beforeAll(async () => {
    store = createSqliteStore(":memory:", { roles: storeRoles });
    for (const org of [orgA, orgB]) {
      await store.createGroup({ uid: org, parentUid: "", name: org, description: "", now: t0 });
    }
    // Two organizations' events interleaved in time, two of A's in each millisecond.
    const insert = store.db.prepare(
      `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
       VALUES (?, ?, ?, 'dev.gatehouse.iam.group.created.v1', '/t', ?, ?, '', '{}')`,
    );
    store.db.transaction(() => {
      for (let i = 0; i < 3 * perOrg; i++) {
        const org = i % 3 === 2 ? orgB : orgA;
        const subject = `${org}/${(i % 7).toString(16).padStart(16, "0")}`;
        const id = `e${String(i).padStart(6, "0")}`;
        insert.run(id, `${subject}/${id}`, org, subject, t0 + Math.floor(i / 3));
      }
    })();
    // Each events statement the store prepares from here on, and what it binds.
    const db = store.db as unknown as { prepare(text: string): unknown };
    const prepare = db.prepare.bind(db);
    db.prepare = (text: string) => {
      const stmt = prepare(text) as Record<string, (...p: unknown[]) => unknown>;
      if (!text.includes("FROM events AS t")) return stmt;
      for (const m of ["all", "get"] as const) {
        const run = stmt[m]!.bind(stmt);
        stmt[m] = (...params) => {
          seen.push({ text, params });
          return run(...params);
        };
      }
      return stmt;
    };
  });
  afterAll(async () => {
    await store?.close();
  });

  const query = (limit: number, noTotal: boolean): ListQuery<EventFilters> => ({
    filters: { since: t0, before: t0 + perOrg },
    order: { field: "create_time", desc: false },
    skip: 0,
    limit,
    scope: [orgA],
    ...(noTotal ? { noTotal: true } : {}),
  });

  /** Every page of `q`, and the statements the second page ran. */
  async function walk(q: ListQuery<EventFilters>) {
    const uids: string[] = [];
    let second: Traced[] = [];
    let after: ListQuery["after"];
    for (let page = 1; ; page++) {
      const from = seen.length;
      const got = await store.listEvents({ ...q, ...(after ? { after } : {}) });
      if (page === 2) second = seen.slice(from);
      uids.push(...got.items.map((e) => e.uid));
      const last = got.items.at(-1);
      if (!got.hasMore || !last) return { uids, second, total: got.total };
      after = { value: last.time, uid: last.uid };
    }
  }

  const plan = (s: Traced) =>
    (store.db.prepare(`EXPLAIN QUERY PLAN ${s.text}`).all(...s.params) as { detail: string }[]).map(
      (r) => r.detail,
    );

  /** A's events in (time, uid) order, as read from the table. */
  const expected = () =>
    (
      store.db
        .prepare("SELECT uid FROM events WHERE group_uid = ? ORDER BY time, uid")
        .all(orgA) as { uid: string }[]
    ).map((r) => r.uid);

  it("an export's page seeks to its cursor, sorts nothing and counts nothing", async () => {
    const { uids, second } = await walk(query(50, true));
    expect(uids).toEqual(expected());
    expect(uids).toHaveLength(2 * perOrg);
    expect(second.map((s) => s.text).filter((t) => /COUNT\(/i.test(t))).toEqual([]);
    expect(second).toHaveLength(1);
    const steps = plan(second[0]!);
    expect(steps).toContain("SEARCH t USING INDEX events_time_uid ((time,uid)>(?,?) AND time<?)");
    expect(steps.filter((s) => s.includes("TEMP B-TREE"))).toEqual([]);
  });

  it("ListEvents' page seeks as well, and its total is counted from the index alone", async () => {
    const { uids, second, total } = await walk(query(40, false));
    expect(uids).toEqual(expected());
    expect(total).toBe(2 * perOrg);
    const count = second.find((s) => /COUNT\(/i.test(s.text));
    const page = second.find((s) => !/COUNT\(/i.test(s.text));
    expect(plan(count!)).toEqual([
      "SEARCH t USING COVERING INDEX events_time_uid (time>? AND time<?)",
    ]);
    expect(plan(page!)).toContain(
      "SEARCH t USING INDEX events_time_uid ((time,uid)>(?,?) AND time<?)",
    );
  });

  it("scopes by organization as the closure did: a group below a root sees none", async () => {
    const both = await walk({ ...query(100, false), scope: [orgB, orgA] });
    expect(both.total).toBe(3 * perOrg);
    const below = await walk({ ...query(100, false), scope: [`${orgA}/${"0".repeat(16)}`] });
    expect(below).toMatchObject({ uids: [], total: 0 });
    const none = await walk({ ...query(100, false), scope: [] });
    expect(none).toMatchObject({ uids: [], total: 0 });
  });
});
