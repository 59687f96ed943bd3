/**
 * Measure the advisory List filters at scale: 100k advisories (the Go vulnerability database,
 * Go Vulnerability Database, The Go Authors, CC BY 4.0, repeated under ids of its own) in one
 * organization, then each filter once warm. Prints milliseconds per query. Not run by CI:
 * `npx tsc --outDir <dir>`, then from the repository root `node <dir>/bench/advisory-filters.js`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeRoles } from "../src/auth/capabilities.js";
import { advisoryFromOsv } from "../src/import/osv.js";
import { readRecords } from "../src/import/read-records.js";
import type { AdvisoryContent, AdvisoryFilters } from "../src/store/advisory-store.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { ListQuery } from "../src/store/store.js";
import { newChildUid } from "../src/uid.js";

const target = Number(process.argv[2] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), "gatehouse-bench-"));
const store = createSqliteStore(join(dir, "bench.db"), {
  roles: storeRoles,
  synchronous: "NORMAL",
});
const org = "a".repeat(40);
await store.createGroup({ uid: org, parentUid: "", name: "bench", description: "", now: 1 });

// Run from the repository root: the sample in test/fixtures, or the full file as argument 3.
const base = readRecords(process.argv[3] ?? "test/fixtures/osv/go-vulndb-sample.jsonl.gz").flatMap(
  (r) => ("value" in r ? [advisoryFromOsv(r.value)] : []),
);
let t = performance.now();
for (let copy = 0; copy * base.length < target; copy++) {
  const batch: AdvisoryContent[] = base
    .slice(0, Math.min(base.length, target - copy * base.length))
    .map((a) => ({
      ...a,
      advisoryId: `${a.advisoryId}-${copy}`,
      aliases: a.aliases.map((x) => `${x}-${copy}`),
      artifactName: `registry.example/app-${copy % 50}`,
    }));
  await store.importAdvisories(org, batch, () => newChildUid(org), copy + 1);
}
console.log(`import ${target}: ${Math.round(performance.now() - t)} ms`);

const q = (filters: AdvisoryFilters, scope?: string[]): ListQuery<AdvisoryFilters> => ({
  filters,
  order: { field: "create_time", desc: false },
  skip: 0,
  limit: 50,
  ...(scope ? { scope } : {}),
});
const cases: [string, ListQuery<AdvisoryFilters>][] = [
  ["no filter", q({})],
  ["alias", q({ alias: "CVE-2021-44716-7" })],
  ["componentName", q({ componentName: "stdlib" })],
  ["artifactName", q({ artifactName: "registry.example/app-3" })],
  ["latestEventType FIXED", q({ latestEventType: 4 })],
  ["query 'cve-2021-4471' (trigram)", q({ query: "cve-2021-4471" })],
  ["query 'x/net' (trigram, many)", q({ query: "x/net" })],
  ["query 'go' (short: scan)", q({ query: "go" })],
  ["query + componentName", q({ query: "2022", componentName: "stdlib" })],
  ["query, scoped", q({ query: "ghsa-" }, [org])],
];
for (const [name, query] of cases) {
  await store.listAdvisories(query);
  t = performance.now();
  const page = await store.listAdvisories(query);
  console.log(`${name}: ${(performance.now() - t).toFixed(1)} ms (total ${page.total})`);
}
await store.close();
rmSync(dir, { recursive: true, force: true });
