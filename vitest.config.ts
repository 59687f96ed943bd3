import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { classify, filesOf, type Tier, tierNames, tierSetup } from "./test/tiers.js";

// The suite in tiers (test/tiers.ts says which file goes where, and why): `npm test` runs them
// all; `npx vitest run --project unit` one of them; `npx vitest run test/foo` a file, paying
// only for its own tier's setup.
const root = fileURLToPath(new URL(".", import.meta.url));
const tiers = classify(root);

const setupOf = (tier: Tier) => [
  ...(tierSetup[tier].console ? ["test/setup/console.ts"] : []),
  ...(tierSetup[tier].postgres ? ["test/setup/postgres.ts"] : []),
];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    projects: tierNames.map((tier) => ({
      extends: true,
      test: {
        name: tier,
        // A tier with no file yet must not fall back to vitest's default include.
        include: filesOf(tiers, tier).length > 0 ? filesOf(tiers, tier) : [`no-${tier}-tests`],
        globalSetup: setupOf(tier),
        // Unit files open no socket and start no process: a worker thread each, not a process
        // (a file alone starts about 0.4 s sooner; the tier runs in about 0.85 of the time).
        ...(tier === "unit" ? { pool: "threads" as const } : {}),
      },
    })),
  },
});
