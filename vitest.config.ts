import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { classifyOnce, filesOf, type Tier, tierNames, tierSetup } from "./test/tiers.js";

// The suite in tiers (test/tiers.ts says which file goes where, and why): `npm test` runs them
// all; `npx vitest run --project unit` one of them; `npx vitest run test/foo` a file, paying
// only for its own tier's setup.
const root = fileURLToPath(new URL(".", import.meta.url));
const tiers = classifyOnce(root);

// Tiers whose files share a worker process, one file after another, instead of a fresh process
// a file (vitest's `isolate`): their modules (src/, gen/, fastify, grpc-js, connect) are loaded
// once a worker, not once a file. Fifty small api files took 488 s one process each and 139 s
// sharing (load average 17-19 on 2 cores; the imports alone 212 s against 4 s). What they share
// is harmless: every server, store and client is a file's own, started and closed by it (a
// file that changes the environment, timers or globals puts them back). PostgreSQL's too: its
// helper's module state (helpers/postgres.ts: the migrated template, the databases leased)
// then serves a worker's files as it serves a file's tests, a database freed by one test reset
// for the next, and the template migrated once a worker instead of once a file (eight of its
// files: 79 s one process each, 58 s sharing, the imports 34 s against 11 s, load 14-18). The
// browser tier's too: each file starts and closes its own server and Chromium, and a worker no
// longer loads src/ once a file (seven console files side by side: 418 s one process each,
// 350 s sharing, the imports 176 s against 47 s, load 17-25). The reliability tier's too: what
// its files measure is the servers they start in processes of their own (crashes, SIGTERM,
// memory ceilings: non-readers reads its child's /proc status), or ratios within a file against
// a baseline of the same file; none reads the worker's own memory. Its fifteen files took 42 s
// of CPU in their workers one process each and 22 s sharing, the imports 102 s against 27 s
// (load 12-14; what their children used, 44 and 28 s, is the servers they start).
const sharedWorkers = new Set<Tier>(["unit", "api", "postgres", "browser", "reliability"]);

const setupOf = (tier: Tier) => [
  // Every tier: the run's temporary files under one root, removed at the end (temp-root.ts).
  "test/setup/temp-root.ts",
  ...(tierSetup[tier].console ? ["test/setup/console.ts"] : []),
  ...(tierSetup[tier].postgres ? ["test/setup/postgres.ts"] : []),
];

// The order the tiers run in. Vitest runs a project's files together (a shared worker lives
// while the next file is of its project) and, by default, the projects in the order of their
// names: the unit tier came last, and its longest file (the SQLite store's, 15-33 s) ran alone
// at the end of every run while the other worker idled. The heavy tiers first, then the api
// tier's hundred short files, which two workers share out evenly to the end. The package
// tier first of all: its image build is one file's longest wait (17 s alone, a cold build in
// child processes; 50-60 s while the build still type-checked), which the unit and reliability
// tiers' files fill the other workers beside.
const tierOrder: readonly Tier[] = ["package", "unit", "reliability", "postgres", "browser", "api"];

/** Vitest's order within a tier (longest, or largest, first), the tiers in tierOrder. */
class TierSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => tierOrder.indexOf(f.project.name as Tier);
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Three files at a time on a 2-core machine (one fewer than the cores on a bigger one, vitest's
    // default). That default ran the whole suite one file at a time on 2 cores: 1,040 s of wall
    // time for 675 s of files. A file's own work is a server and its clients in one process,
    // and child processes, browsers and PostgreSQL that it waits for: two at a time kept the
    // two cores 1.3 busy (579 s of CPU in 459 s), three at a time took 343 s of vitest wall
    // where two took 429 s (load 2-5). VITEST_MAX_WORKERS overrides it (.ci/run's other Node
    // lines, which run side by side, take two each).
    maxWorkers: Math.max(3, availableParallelism() - 1),
    // The test files and what they import run on Node's own ESM loader (`import`), with the
    // TypeScript hooks the suites' child processes use (test/reliability/child/register-ts.mjs:
    // types stripped by rolldown, kept on disk, and V8's compiled code kept too), not through
    // vite's module runner, which evaluated each module through its own loader and resolved
    // its imports by a call to the main process. The unit and api tiers, one run each after
    // the other: 109 s of CPU, then 102 s (57 s of wall, then 52 s). Whole runs: the imports,
    // summed over files, 61 s, then 38-47 s; the suite's total CPU (500-567 s over four runs)
    // varies more from run to run than it moved. What that runner alone offers, and the suites
    // do not use: `vi.mock` and in-source tests (`import.meta.vitest`), hence nodeLoader off.
    execArgv: ["--import", "./test/reliability/child/register-ts.mjs"],
    experimental: { viteModuleRunner: false, nodeLoader: false },
    sequence: { sequencer: TierSequencer },
    projects: tierNames.map((tier) => ({
      extends: true,
      test: {
        name: tier,
        // A tier with no file yet must not fall back to vitest's default include.
        include: filesOf(tiers, tier).length > 0 ? filesOf(tiers, tier) : [`no-${tier}-tests`],
        globalSetup: setupOf(tier),
        // Unit files open no socket and start no process: worker threads, not processes (the
        // tier ran in about 0.85 of the time under load; a file alone, no clear change).
        ...(tier === "unit" ? { pool: "threads" as const } : {}),
        ...(sharedWorkers.has(tier) ? { isolate: false } : {}),
      },
    })),
  },
});
