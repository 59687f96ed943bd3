/**
 * What `order_by` on a field without an index costs a large organization (issue 42 item 3):
 * 100k groups (fan-out 10) in one organization, in a temporary SQLite database, then ListGroups
 * of the whole tree (first page of 50, with totalCount, and a page half-way through by cursor)
 * ordered by `name` (indexed: the baseline of the same run) and by `description`, first
 * without an index on description (the migrations' groups_description dropped), then with it
 * made again in the same database. Prints p50/p99 in ms per page. Run: `npm run build && node dist/bench/order-by.js
 * [groups]` (default 100,000).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Cursor } from "../src/store/store.js";
import { seedGroupTree } from "./group-tree.js";

const n = Number(process.argv[2] ?? 100_000);
const samples = 100;
const words = ["payments", "search", "mobile", "infra", "data", "web", "ml", "edge", "ops"];

const dir = mkdtempSync(join(tmpdir(), "gatehouse-order-by-"));
// Descriptions in no relation to names or times: many repeat, as team names do.
const describe = (i: number) => `${words[(i * 7) % words.length]} team ${(i * 7919) % 5000}`;
const { store, root, groups } = await seedGroupTree(join(dir, "order.db"), {
  groups: n,
  name: "order",
  description: describe,
});
const descriptions = groups.slice(1).map((_, k) => describe(k + 1));

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

/** p50 and p99 of one page of the whole tree in `field`'s order, after `after` if given. */
async function time(field: string, desc: boolean, after?: Cursor): Promise<string> {
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await store.listGroups({
      descendantsOf: root,
      filters: {},
      order: { field, desc },
      skip: 0,
      limit: 50,
      ...(after ? { after } : {}),
    });
    out.push(performance.now() - t);
  }
  return `p50 ${pct(out, 50).toFixed(2)} ms, p99 ${pct(out, 99).toFixed(2)} ms`;
}

const middleName = {
  value: `g${Math.floor(n / 2)
    .toString()
    .padStart(7, "0")}`,
  uid: "",
};
const middleDescription = { value: [...descriptions].sort()[Math.floor(n / 2)]!, uid: "" };
const run = async (label: string) => {
  console.log(`-- ${label}`);
  console.log(`name, first page:               ${await time("name", false)}`);
  console.log(`name, half-way:                 ${await time("name", false, middleName)}`);
  console.log(`description, first page:        ${await time("description", false)}`);
  console.log(`description desc, first page:   ${await time("description", true)}`);
  console.log(
    `description, half-way:          ${await time("description", false, middleDescription)}`,
  );
};
console.log(
  `${n} groups in one organization, load ${(await import("node:os")).loadavg()[0]!.toFixed(1)}`,
);
// The migrations make groups_description; the baseline runs without it, as before them.
store.db.exec("DROP INDEX groups_description");
await run("no index on description");
store.db.exec("CREATE INDEX groups_description ON groups (description, uid)");
store.db.exec("ANALYZE");
await run("with groups (description, uid)");
await store.close();
rmSync(dir, { recursive: true, force: true });
