/**
 * Cost as the work grows: one organization of 1k, 10k, 100k and 1M groups (fan-out 10), built
 * through the Store API in a temporary database, then measured in process: GetGroup, ListGroups
 * (first page and a deep page, with totalCount, by name and by create_time), a role check at
 * depth 5, CreateGroup (a FULL commit each), the database's size per group (and each table's
 * and index's, from dbstat) and the process's memory. Nothing should grow faster than log n
 * per call. Run: `node dist/bench/scale.js [max groups]` (default 1,000,000).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newChildUid } from "../src/uid.js";
import { seedGroupTree } from "./group-tree.js";

const max = Number(process.argv[2] ?? 1_000_000);
const sizes = [1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= max);
const samples = 2_000;

interface Row {
  groups: number;
  getP50: number;
  getP99: number;
  listFirstP99: number;
  listDeepP99: number;
  /** The same two pages ordered by create_time (the default order). */
  timeFirstP99: number;
  timeDeepP99: number;
  checkP99: number;
  createP50: number;
  createP99: number;
  bytesPerGroup: number;
  closurePerGroup: number;
  rssMb: number;
  /** Bytes per group of each table and index (dbstat: the pages each b-tree holds). */
  objects: { name: string; bytesPerGroup: number }[];
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const ms = (x: number) => `${x.toFixed(3)} ms`;

async function timeEach(n: number, f: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return out;
}

async function measure(n: number): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-scale-"));
  const path = join(dir, "scale.db");
  // Seeded with NORMAL commits in batches (as bench/seed.ts does), measured with FULL ones.
  const {
    store,
    root,
    admin,
    groups: all,
    now,
  } = await seedGroupTree(path, {
    groups: n,
    name: "scale",
  });
  const deepest = all[all.length - 1] as string;

  const pick = (i: number) => all[(i * 7919) % all.length] as string;
  const gets = await timeEach(samples, (i) => store.getGroup(pick(i)));
  // A first page of the tree, or the page after `after`, in order of `field`.
  const page = (field: "name" | "create_time", after?: { value: string | number; uid: string }) =>
    store.listGroups({
      descendantsOf: root,
      filters: {},
      order: { field, desc: false },
      skip: 0,
      limit: 50,
      ...(after ? { after } : {}),
    });
  const listFirst = await timeEach(200, () => page("name"));
  // A deep page: the cursor of a name (or a create time) half-way through the tree.
  const middle = `g${Math.floor(n / 2)
    .toString()
    .padStart(7, "0")}`;
  const listDeep = await timeEach(200, () => page("name", { value: middle, uid: "" }));
  const timeFirst = await timeEach(200, () => page("create_time"));
  const timeDeep = await timeEach(200, () =>
    page("create_time", { value: now + Math.floor(n / 2), uid: "" }),
  );
  // The role check of a call at the deepest group: the admin's capabilities along its path.
  const path5 = await store.getGroupPath(deepest);
  const checks = await timeEach(samples, () => store.capabilitiesAt(admin, path5));
  const parent = all[Math.floor(all.length / 2)] as string;
  const creates = await timeEach(300, (i) =>
    store.createGroup({
      uid: newChildUid(parent),
      parentUid: parent,
      name: `new-${i}`,
      description: "",
      now: Date.now(),
    }),
  );
  store.db.pragma("wal_checkpoint(TRUNCATE)");
  // Every b-tree's pages (free pages are nowhere in it): the groups' tables and indexes, the
  // rest summed as one.
  const pages = store.db
    .prepare("SELECT name, sum(pgsize) AS b FROM dbstat GROUP BY name ORDER BY b DESC")
    .all() as { name: string; b: number }[];
  const isGroups = (name: string) => /^(groups|group_closure|sqlite_autoindex_groups)/.test(name);
  const closurePages = pages
    .filter((p) => p.name === "group_closure" || p.name === "group_closure_descendant")
    .reduce((sum, p) => sum + p.b, 0);
  const objects = [
    ...pages.filter((p) => isGroups(p.name)),
    { name: "(the rest)", b: pages.filter((p) => !isGroups(p.name)).reduce((s, p) => s + p.b, 0) },
  ].map((p) => ({ name: p.name, bytesPerGroup: p.b / n }));
  const bytes = statSync(path).size;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    groups: n,
    getP50: pct(gets, 50),
    getP99: pct(gets, 99),
    listFirstP99: pct(listFirst, 99),
    listDeepP99: pct(listDeep, 99),
    timeFirstP99: pct(timeFirst, 99),
    timeDeepP99: pct(timeDeep, 99),
    checkP99: pct(checks, 99),
    createP50: pct(creates, 50),
    createP99: pct(creates, 99),
    bytesPerGroup: bytes / n,
    closurePerGroup: closurePages / n,
    rssMb: process.memoryUsage().rss / 1024 / 1024,
    objects,
  };
}

console.log(
  "| groups | GetGroup p50 / p99 | ListGroups first / deep page p99 | role check p99 | CreateGroup p50 / p99 | bytes per group (closure) | RSS |",
);
console.log("|---|---|---|---|---|---|---|");
const rows: Row[] = [];
for (const n of sizes) {
  const r = await measure(n);
  rows.push(r);
  console.log(
    `| ${n.toLocaleString("en-US")} | ${ms(r.getP50)} / ${ms(r.getP99)} | ${ms(r.listFirstP99)} / ${ms(r.listDeepP99)} | ${ms(r.checkP99)} | ${ms(r.createP50)} / ${ms(r.createP99)} | ${Math.round(r.bytesPerGroup)} B (${Math.round(r.closurePerGroup)} B) | ${Math.round(r.rssMb)} MB |`,
  );
}
console.log();
console.log("ListGroups ordered by create_time, first / deep page p99:");
console.log();
for (const r of rows) {
  console.log(
    `- ${r.groups.toLocaleString("en-US")}: ${ms(r.timeFirstP99)} / ${ms(r.timeDeepP99)}`,
  );
}
console.log();
console.log("Bytes per group of each b-tree (dbstat), by size:");
console.log();
console.log(`| b-tree | ${rows.map((r) => r.groups.toLocaleString("en-US")).join(" | ")} |`);
console.log(`|---|${rows.map(() => "---").join("|")}|`);
const names = [...new Set(rows.flatMap((r) => r.objects.map((o) => o.name)))];
for (const name of names) {
  const cells = rows.map((r) => {
    const o = r.objects.find((x) => x.name === name);
    return o ? `${Math.round(o.bytesPerGroup)} B` : "-";
  });
  console.log(`| ${name} | ${cells.join(" | ")} |`);
}
