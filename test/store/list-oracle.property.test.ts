import { createHash } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupSchema } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createListEngine, type ListEngine } from "../../src/list/list.js";
import { sortFieldsOf } from "../../src/list/sort-fields.js";
import { sortValueOf } from "../../src/services/sort-value.js";
import { createPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { groups } from "../../src/store/rows/group-rows.js";
import { createSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { type GroupRecord, type SortField, type Store, StoreError } from "../../src/store/store.js";
import { isAtOrBelow } from "../../src/uid.js";
import { newPgDatabase } from "../helpers/postgres.js";
import { type ClosureRow, closureFromParents, sortClosure } from "./store-suite.js";

// Few names and times, so that many groups tie on their sort value and uids break the ties.
const names = ["a", "b", "c"];
const orders: [string, SortField][] = [
  ["name", "name"],
  ["create_time", "create_time"],
  ["createTime", "create_time"],
  ["update_time", "update_time"],
  ["uid", "uid"],
  // Fields of the Group message beyond the common ones; "" or "u", false: ties everywhere.
  ["description", "description"],
  ["verified", "verified"],
];
const sort = sortFieldsOf(GroupSchema, groups.listColumns);

/** One step of building a tree: a group under an earlier one (or a new root). */
const nodeArb = fc.record({
  // About one node in five starts a new organization.
  root: fc.integer({ min: 0, max: 4 }).map((x) => x === 0),
  parent: fc.nat(),
  name: fc.constantFrom(...names),
  createTime: fc.integer({ min: 1, max: 3 }),
  updateTime: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
});

/** A uid pick: an index into the live groups, or -1 for a uid that exists nowhere. */
const uidIndexArb = fc.oneof(fc.nat(), fc.constant(-1));
/** Mostly absent: each filter present in about one run of four, so results are rarely empty. */
const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight: 1 });

const scenarioArb = fc.record({
  nodes: fc.array(nodeArb, { minLength: 1, maxLength: 24 }),
  deletes: fc.array(fc.nat(), { maxLength: 6 }),
  descendantsOf: sometimes(uidIndexArb),
  childrenOf: sometimes(fc.nat()),
  ancestorsOf: sometimes(uidIndexArb),
  inRoot: sometimes(fc.constant(true)),
  ids: sometimes(fc.array(uidIndexArb, { minLength: 1, maxLength: 4 })),
  name: sometimes(fc.constantFrom(...names, "zz")),
  scope: sometimes(fc.array(uidIndexArb, { maxLength: 3 })),
  order: fc.constantFrom(...orders),
  desc: fc.boolean(),
  pages: fc.array(
    fc.record({ size: fc.integer({ min: 1, max: 5 }), skip: fc.integer({ min: 0, max: 2 }) }),
    { minLength: 1, maxLength: 6 },
  ),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

const hex = (s: string, n: number) => createHash("sha256").update(s).digest("hex").slice(0, n);
const nowhere = "f".repeat(40);

/** Build the scenario's tree in the store; return the groups that exist at the end. */
async function buildTree(store: Store, s: Scenario): Promise<GroupRecord[]> {
  const live: GroupRecord[] = [];
  for (const [i, n] of s.nodes.entries()) {
    const parent = n.root || live.length === 0 ? undefined : live[n.parent % live.length]!;
    const uid = parent ? `${parent.uid}/${hex(`${i}`, 16)}` : hex(`${i}`, 40);
    const g = { uid, parentUid: parent?.uid ?? "", name: n.name, description: "" };
    const clash = live.some((o) => parent && o.parentUid === parent.uid && o.name === n.name);
    const created = await store.createGroup({ ...g, now: n.createTime }).catch((e: unknown) => e);
    if (clash) {
      expect(created).toBeInstanceOf(StoreError);
      expect(created).toMatchObject({ kind: "already_exists" });
      continue;
    }
    expect(created).not.toBeInstanceOf(Error);
    live.push(created as GroupRecord);
    if (n.updateTime !== undefined) {
      live[live.length - 1] = await store.updateGroup(uid, { description: "u" }, n.updateTime);
    }
  }
  for (const d of s.deletes) {
    const victim = live[d % live.length];
    if (!victim) break;
    const hasChildren = live.some((g) => g.parentUid === victim.uid);
    const result = await store.deleteGroup(victim.uid).then(
      () => "deleted",
      (e: StoreError) => e.kind,
    );
    expect(result).toBe(hasChildren ? "not_empty" : "deleted");
    if (!hasChildren) live.splice(live.indexOf(victim), 1);
  }
  return live;
}

const pick = (live: GroupRecord[], i: number | undefined) =>
  i === undefined ? undefined : i < 0 || live.length === 0 ? nowhere : live[i % live.length]!.uid;

/** Whether `uid` is strictly below `ancestor`, by walking parent links (not by uid prefix). */
function strictlyBelow(byUid: Map<string, GroupRecord>, uid: string, ancestor: string): boolean {
  for (let p = byUid.get(uid)?.parentUid; p; p = byUid.get(p)?.parentUid) {
    if (p === ancestor) return true;
  }
  return false;
}

/** The oracle: filter and sort in memory. */
function expected(live: GroupRecord[], s: Scenario): GroupRecord[] {
  const byUid = new Map(live.map((g) => [g.uid, g]));
  const descendantsOf = pick(live, s.descendantsOf);
  const childrenOf = pick(live, s.childrenOf);
  const ancestorsOf = pick(live, s.ancestorsOf);
  const ids = s.ids?.map((i) => pick(live, i)!);
  const scope = s.scope?.map((i) => pick(live, i)!);
  const field = s.order[1];
  const cmp = (a: GroupRecord, b: GroupRecord) => {
    const va = sortValueOf(a, field);
    const vb = sortValueOf(b, field);
    const c = va < vb ? -1 : va > vb ? 1 : a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
    return s.desc ? -c : c;
  };
  return live
    .filter((g) => descendantsOf === undefined || strictlyBelow(byUid, g.uid, descendantsOf))
    .filter((g) => childrenOf === undefined || g.parentUid === childrenOf)
    .filter((g) => ancestorsOf === undefined || strictlyBelow(byUid, ancestorsOf, g.uid))
    .filter((g) => s.inRoot === undefined || g.parentUid === "")
    .filter((g) => ids === undefined || ids.includes(g.uid))
    .filter((g) => s.name === undefined || g.name === s.name)
    .filter((g) => scope === undefined || scope.some((a) => isAtOrBelow(g.uid, a)))
    .sort(cmp);
}

/**
 * Follow next-page tokens to the end, checking every page against the oracle; return the uids
 * in the order they came.
 */
async function walkPages(
  store: Store,
  lists: ListEngine,
  live: GroupRecord[],
  s: Scenario,
): Promise<string[]> {
  const want = expected(live, s);
  const descendantsOf = pick(live, s.descendantsOf) ?? "";
  const childrenOf = pick(live, s.childrenOf) ?? "";
  const ancestorsOf = pick(live, s.ancestorsOf) ?? "";
  const ids = s.ids?.map((i) => pick(live, i)!) ?? [];
  const scope = s.scope?.map((i) => pick(live, i)!);
  const seen = new Set<string>();
  let pos = 0;
  let pageToken = "";
  for (let n = 0; ; n++) {
    expect(n).toBeLessThan(200);
    const { size, skip } = s.pages[n % s.pages.length]!;
    const req = {
      uidp: { descendantsOf, childrenOf, ancestorsOf, inRoot: s.inRoot ?? false, ids },
      name: s.name ?? "",
      pageSize: size,
      pageToken,
      orderBy: `${s.order[0]}${s.desc ? " desc" : ""}`,
      skip,
    };
    const query = lists.parse(req, {}, scope ? { scope, sort } : { sort });
    const page = lists.finish(query, await store.listGroups(query), sortValueOf);
    // skip counts from the cursor: the previous page's last item.
    const start = pos + skip;
    expect(page.items.map((g) => g.uid)).toEqual(want.slice(start, start + size).map((g) => g.uid));
    expect(page.totalCount).toBe(BigInt(want.length));
    expect(page.skipped).toBe(skip);
    for (const g of page.items) {
      expect(seen.has(g.uid)).toBe(false);
      seen.add(g.uid);
    }
    const more = want.length > start + size;
    expect(page.nextPageToken !== undefined).toBe(more);
    if (!page.nextPageToken) return [...seen];
    pos = start + page.items.length;
    pageToken = page.nextPageToken;
  }
}

/**
 * A backend for the property: a store for one run, the closure rows it keeps, and how many
 * runs it gets (PostgreSQL's are dearer). Each backend's store is opened once for the file and
 * emptied between runs: a new SQLite store a run spent about 50 ms of CPU migrating, most of
 * the SQLite runs' time (150 runs), and PostgreSQL's TRUNCATE ... CASCADE gave every table
 * that names a group new files each run, where a DELETE of the rows a run wrote touches those.
 */
interface Backend {
  name: string;
  runs: number;
  open(): Promise<{ store: Store; closure(): Promise<ClosureRow[]>; done(): Promise<void> }>;
}

let sqliteStore: SqliteStore | undefined;
/** The SQLite store's tables a run may fill: those empty once it is open (not the seeded). */
let sqliteRunTables: string[] = [];
const sqlite: Backend = {
  name: "sqlite",
  runs: 100,
  async open() {
    const store = sqliteStore!;
    return {
      store,
      closure: async () =>
        store.db
          .prepare("SELECT ancestor, descendant, depth FROM group_closure_by_uid")
          .all() as ClosureRow[],
      done: async () => {
        // In any order: the foreign keys are off while the run's rows go.
        store.db.pragma("foreign_keys = OFF");
        try {
          for (const t of sqliteRunTables) store.db.prepare(`DELETE FROM "${t}"`).run();
        } finally {
          store.db.pragma("foreign_keys = ON");
        }
      },
    };
  },
};

let pgStore: PostgresStore | undefined;
/** The statements that empty the PostgreSQL store's tables a run may fill. */
let pgEmpty = "";
const postgres: Backend = {
  name: "postgres",
  runs: 30,
  async open() {
    const store = pgStore!;
    return {
      store,
      closure: () =>
        store.db.sql.rows<ClosureRow>(
          "SELECT ancestor, descendant, depth FROM group_closure_by_uid",
        ),
      done: async () => {
        await store.db.sql.run(pgEmpty);
      },
    };
  },
};

beforeAll(async () => {
  sqliteStore = createSqliteStore(":memory:", { roles: storeRoles });
  const db = sqliteStore.db;
  // Ordinary tables only: a full-text index's shadow tables empty with it.
  const sqliteTables = db
    .prepare(
      "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite_%'",
    )
    .pluck()
    .all() as string[];
  sqliteRunTables = sqliteTables.filter((t) => !db.prepare(`SELECT 1 FROM "${t}"`).get());
  pgStore = await createPostgresStore(await newPgDatabase(), { roles: storeRoles });
  const pgTables = await pgStore.db.sql.rows<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')`,
  );
  const empty: string[] = [];
  for (const { name } of pgTables) {
    if ((await pgStore.db.sql.rows(`SELECT 1 FROM "${name}" LIMIT 1`)).length === 0) {
      empty.push(`DELETE FROM "${name}"`);
    }
  }
  // Foreign keys are enforced by triggers, off for the emptying: the tables empty in any order.
  pgEmpty = ["BEGIN", "SET LOCAL session_replication_role = replica", ...empty, "COMMIT"].join(
    ";\n",
  );
});
afterAll(async () => {
  await sqliteStore?.close();
  await pgStore?.close();
});

describe.each([sqlite, postgres])(
  "listGroups through the list engine, against an in-memory oracle, on $name",
  (backend) => {
    const lists = createListEngine({ key: Buffer.alloc(32, 1), now: () => 1_000 });

    it("pages through random trees, filters, orders, page sizes and skips", async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (s) => {
          const { store, closure, done } = await backend.open();
          try {
            const live = await buildTree(store, s);
            expect(sortClosure(await closure())).toEqual(closureFromParents(live));
            await walkPages(store, lists, live, s);
          } finally {
            await done();
          }
        }),
        { numRuns: backend.runs },
      );
    });

    it("yields the whole ordered sequence, without gaps, when nothing is skipped", async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, fc.integer({ min: 1, max: 4 }), async (s, size) => {
          const { store, done } = await backend.open();
          try {
            const live = await buildTree(store, s);
            const noSkip = { ...s, pages: [{ size, skip: 0 }] };
            const uids = await walkPages(store, lists, live, noSkip);
            expect(uids).toEqual(expected(live, noSkip).map((g) => g.uid));
          } finally {
            await done();
          }
        }),
        { numRuns: Math.ceil(backend.runs / 2) },
      );
    });
  },
);
