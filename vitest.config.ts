import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { classify, filesOf, type Tier, tierNames, tierSetup } from "./test/tiers.js";

// The suite in tiers (test/tiers.ts says which file goes where, and why): `npm test` runs them
// all; `npx vitest run --project unit` one of them; `npx vitest run test/foo` a file, paying
// only for its own tier's setup.
const root = fileURLToPath(new URL(".", import.meta.url));
const tiers = classify(root);

const setupOf = (tier: Tier) => [
  // Every tier: the run's temporary files under one root, removed at the end (temp-root.ts).
  "test/setup/temp-root.ts",
  ...(tierSetup[tier].console ? ["test/setup/console.ts"] : []),
  ...(tierSetup[tier].postgres ? ["test/setup/postgres.ts"] : []),
];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Transformed modules kept between runs (node_modules/.experimental-vitest-cache, keyed by
    // content): a run of one api file spent more on transforming src/ and gen/ than on its
    // tests (transform 1.3-1.8 s, then 0.2 s; the file's wall time 5.1-5.4 s, then 3.4-4.0 s).
    experimental: { fsModuleCache: true },
    projects: tierNames.map((tier) => ({
      extends: true,
      test: {
        name: tier,
        // A tier with no file yet must not fall back to vitest's default include.
        include: filesOf(tiers, tier).length > 0 ? filesOf(tiers, tier) : [`no-${tier}-tests`],
        globalSetup: setupOf(tier),
        // Unit files open no socket and start no process: a worker thread each, not a process
        // (the tier ran in about 0.85 of the time under load; a file alone, no clear change).
        ...(tier === "unit" ? { pool: "threads" as const } : {}),
      },
    })),
  },
});
