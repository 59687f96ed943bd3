/**
 * `npm run build && node dist/bench/event-pages.js [--events=20000] [--before=<built checkout>]
 * [--pg]`: what a page of the audit trail costs, in process, through the Store API: an export
 * of an organization's time range (ExportEvents' store calls: pages of 500, the caller's scope,
 * since/before, oldest first, no total) and ListEvents' paging of the same range (pages of 200,
 * with the total), over an organization with `--events` events beside another organization
 * with as many, interleaved in time. Each side seeds its own database (a temporary SQLite
 * file, FULL durability; with `--pg`, a database of one embedded PostgreSQL) by raw INSERTs.
 *
 * `--before=<dir>`: a checkout of another commit, built (`npm run build`), measured in the
 * same run, the sides taking turns; prints the plan of each side's page statement (EXPLAIN
 * QUERY PLAN / EXPLAIN), the first page's and the last page's time, and the whole walk's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { PostgresStore } from "../src/store/postgres/pg-store.js";
import type { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { ListQuery, Store } from "../src/store/store.js";
import { startBenchPostgres } from "./postgres-server.js";
import { loadNote } from "./setting-ab.js";

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const events = Number(arg("events") ?? 20_000);
const before = arg("before");
const onPostgres = process.argv.includes("--pg");

/** One side: a checkout's store modules (this one's, or a built one's dist). */
interface Side {
  label: string;
  store: Store;
  /** EXPLAIN of `text` with `params`, one line a step. */
  explain(text: string, params: (string | number)[]): Promise<string[]>;
  /** SQLite: the events statements `store.listEvents(q)` runs, as it runs them. */
  traced?(q: Query): Promise<{ text: string; params: (string | number)[] }[]>;
  close(): Promise<void>;
}

type Query = ListQuery<{ since?: number; before?: number }>;

const dirs: string[] = [];

async function openSide(label: string, root: string, pgUrl?: string): Promise<Side> {
  const mod = (p: string) => import(pathToFileURL(join(root, p)).href);
  const { storeRoles } = await mod("src/auth/capabilities.js");
  if (pgUrl) {
    const { createPostgresStore } = await mod("src/store/postgres/pg-store.js");
    const store = (await createPostgresStore(pgUrl, { roles: storeRoles })) as PostgresStore;
    const db = store.db;
    return {
      label,
      store,
      explain: async (text, params) => {
        let n = 0;
        const rows = await db.sql.rows<{ "QUERY PLAN": string }>(
          `EXPLAIN ${text.replace(/\?/g, () => `$${++n}`)}`,
          params,
        );
        return rows.map((r) => r["QUERY PLAN"]);
      },
      close: () => store.close(),
    };
  }
  const { createSqliteStore } = await mod("src/store/sqlite/sqlite-store.js");
  const dir = mkdtempSync(join(tmpdir(), "event-pages-"));
  dirs.push(dir);
  const store = createSqliteStore(join(dir, "g.db"), { roles: storeRoles }) as SqliteStore;
  return {
    label,
    store,
    explain: async (text, params) =>
      (
        store.db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as {
          detail: string;
        }[]
      ).map((r) => r.detail),
    traced: async (q) => {
      // Each statement the list SQL prepares from here on, and the parameters of its run.
      const seen: { text: string; params: (string | number)[] }[] = [];
      const db = store.db as unknown as { prepare(text: string): unknown };
      const prepare = db.prepare.bind(db);
      db.prepare = (text: string) => {
        const stmt = prepare(text) as Record<string, (...p: (string | number)[]) => unknown>;
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
      try {
        await store.listEvents(q);
      } finally {
        db.prepare = prepare;
      }
      return seen;
    },
    close: async () => store.close(),
  };
}

/** Two organizations of `events` events each, one event a millisecond, alternating. */
async function seed(side: Side, pgUrl?: string): Promise<{ org: string; t0: number }> {
  const t0 = Date.UTC(2026, 10, 1);
  const orgs = ["a", "b"].map((c) => c.repeat(16));
  for (const org of orgs) {
    await side.store.createGroup({ uid: org, parentUid: "", name: org, description: "", now: t0 });
  }
  const subjects = (org: string) =>
    Array.from({ length: 50 }, (_, i) => `${org}/${i.toString(16).padStart(16, "0")}`);
  const rows: unknown[][] = [];
  for (let i = 0; i < 2 * events; i++) {
    const org = orgs[i % 2]!;
    const time = t0 + i;
    const subject = subjects(org)[i % 50]!;
    const id = `${time.toString(16).padStart(12, "0")}-${String(i).padStart(20, "0")}`;
    rows.push([
      id,
      `${subject}/${id}`,
      org,
      "dev.gatehouse.iam.group.created.v1",
      "/bench",
      subject,
      time,
      "",
      JSON.stringify({
        actor: { uid: "", subject: "bench" },
        requestId: `r${i}`,
        group: { uid: subject, name: `g${i}` },
      }),
    ]);
  }
  const insert = `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)`;
  if (pgUrl) {
    const pg = (await import("pg")).default;
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    for (let i = 0; i < rows.length; i += 1000) {
      const chunk = rows.slice(i, i + 1000);
      let n = 0;
      await client.query(
        `${insert} VALUES ${chunk.map((r) => `(${r.map(() => `$${++n}`).join(", ")})`).join(", ")}`,
        chunk.flat(),
      );
    }
    await client.query("ANALYZE events");
    await client.end();
  } else {
    const db = (side.store as SqliteStore).db;
    const stmt = db.prepare(`${insert} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    db.transaction(() => {
      for (const r of rows) stmt.run(...r);
    })();
  }
  return { org: orgs[0]!, t0 };
}

/** Walk every page of `q`; each page's milliseconds and the events seen. */
async function walk(store: Store, q: Query) {
  const times: number[] = [];
  let seen = 0;
  let after: Query["after"];
  for (;;) {
    const began = performance.now();
    const page = await store.listEvents({ ...q, ...(after ? { after } : {}) });
    times.push(performance.now() - began);
    seen += page.items.length;
    const last = page.items.at(-1);
    if (!page.hasMore || !last) return { times, seen };
    after = { value: last.time, uid: last.uid };
  }
}

/**
 * The count and the page statement as a side's list SQL writes them (its list-clauses.ts and
 * event-rows.ts), the cursor after the range's middle.
 */
async function statements(root: string, q: Query, pg: boolean) {
  const mod = (p: string) => import(pathToFileURL(join(root, p)).href);
  const clauses = await mod("src/store/list-clauses.js");
  const rows = await mod("src/store/rows/event-rows.js");
  const uids = pg
    ? {
        match: (c: string) => `${c} = ANY(?::text[])`,
        bind: (u: readonly string[]) => [...u],
        rootOf: (c: string) => `split_part(${c}, '/', 1)`,
      }
    : {
        match: (c: string) => `${c} IN (SELECT value FROM json_each(?))`,
        bind: (u: readonly string[]) => JSON.stringify(u),
        rootOf: (c: string) => `substr(${c}, 1, instr(${c} || '/', '/') - 1)`,
      };
  const t = rows.eventListColumns;
  const filter = clauses.filterConditions(t, q, rows.eventConditions(q.filters), uids) as {
    sql: string;
    params: (string | number)[];
  }[];
  const page = [...filter, clauses.cursorCondition(t, q)];
  const params = (cs: typeof filter) => cs.flatMap((c) => c.params);
  return {
    count: {
      text: `SELECT COUNT(*) AS n FROM events AS t${clauses.whereOf(filter)}`,
      params: params(filter),
    },
    page: {
      text: `SELECT t.* FROM events AS t${clauses.whereOf(page)} ORDER BY ${clauses.orderBy(t, q)} LIMIT ? OFFSET ?`,
      params: [...params(page), q.limit + 1, 0],
    },
  };
}

const pgServer = onPostgres ? await startBenchPostgres() : undefined;
try {
  const sides: Side[] = [];
  const here = resolve(new URL("../..", import.meta.url).pathname, "dist");
  const roots: [string, string][] = [["after (this checkout)", here]];
  if (before) roots.unshift([`before (${before})`, resolve(before, "dist")]);
  const seeds: { org: string; t0: number }[] = [];
  for (const [i, [label, root]] of roots.entries()) {
    const url = pgServer ? await pgServer.createDatabase(`event_pages_${i}`) : undefined;
    const side = await openSide(label, root, url);
    sides.push(side);
    seeds.push(await seed(side, url));
  }
  console.log(
    `${onPostgres ? "PostgreSQL" : "SQLite"}: ${events} events of one organization beside ${events} of another; ${loadNote()}`,
  );
  const base = (org: string, t0: number, limit: number, noTotal: boolean): Query => ({
    filters: { since: t0, before: t0 + 2 * events },
    order: { field: "create_time", desc: false },
    skip: 0,
    limit,
    scope: [org],
    ...(noTotal ? { noTotal: true } : {}),
  });
  for (const [i, side] of sides.entries()) {
    const { org, t0 } = seeds[i]!;
    const q = { ...base(org, t0, 500, false), after: { value: t0 + events, uid: `${org}/` } };
    const stmts = side.traced
      ? Object.fromEntries((await side.traced(q)).map((x, k) => [`statement ${k + 1}`, x]))
      : await statements(roots[i]![1], q, onPostgres);
    for (const [what, stmt] of Object.entries(stmts)) {
      const plan = await side.explain(stmt.text, stmt.params);
      console.log(`${side.label}: ${what} plan\n  ${plan.join("\n  ")}`);
    }
  }
  // Two rounds, the sides taking turns, the first side alternating.
  for (const round of [0, 1]) {
    for (const k of [0, 1]) {
      const i = (round + k) % sides.length;
      if (k > 0 && sides.length === 1) break;
      const side = sides[i]!;
      const { org, t0 } = seeds[i]!;
      for (const [what, limit, noTotal] of [
        ["export (500 a page, no total)", 500, true],
        ["ListEvents (200 a page, total)", 200, false],
      ] as const) {
        const began = performance.now();
        const r = await walk(side.store, base(org, t0, limit, noTotal));
        const ms = performance.now() - began;
        const n = r.times.length;
        console.log(
          `round ${round + 1} ${side.label} ${what}: ${r.seen} events in ${ms.toFixed(0)} ms (${((ms * 1000) / r.seen).toFixed(1)} µs an event); first page ${r.times[0]!.toFixed(1)} ms, last ${r.times[n - 1]!.toFixed(1)} ms, ${n} pages`,
        );
      }
    }
  }
  console.log(loadNote());
  for (const s of sides) await s.close();
} finally {
  await pgServer?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
