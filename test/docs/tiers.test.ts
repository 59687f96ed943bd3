import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import config from "../../vitest.config.js";
import { classify, listTestFiles, needsPostgres, tierNames, tierSetup } from "../tiers.js";

// The tiers cover the whole suite: a test file that no tier includes would never run, not
// even in `npm test`, and a file that needs PostgreSQL in a tier without it would fail late.

const root = fileURLToPath(new URL("../..", import.meta.url));

it("puts every test file in exactly one tier, and the tiers are the whole suite", () => {
  const projects = (config.test?.projects ?? []) as { test: { name: string; include: string[] } }[];
  expect(projects.map((p) => p.test.name)).toEqual([...tierNames]);
  const included = projects.flatMap((p) => p.test.include.filter((f) => f.endsWith(".test.ts")));
  const files = listTestFiles(root);
  expect(files.length).toBeGreaterThan(50);
  // Sorted, so a duplicate (a file in two tiers) shows as a difference too.
  expect([...included].sort()).toEqual(files);
  // This file itself is found where a new file would be.
  expect(files).toContain("test/docs/tiers.test.ts");
});

it("puts every file that uses the shared PostgreSQL in a tier that starts it", () => {
  const tiers = classify(root);
  const stranded = [...tiers]
    .filter(([file]) => needsPostgres(readFileSync(`${root}/${file}`, "utf8")))
    .filter(([, tier]) => !tierSetup[tier].postgres);
  expect(stranded).toEqual([]);
  // And the rule sees the suites known to need it.
  expect(tiers.get("test/store/postgres-store.test.ts")).toBe("postgres");
  expect(tiers.get("test/postgres/api-on-postgres.test.ts")).toBe("postgres");
});

it("keeps sockets and global setup out of the unit tier, and builds the console only for browser", () => {
  const tiers = classify(root);
  for (const [file, tier] of tiers) {
    // (This file names the patterns it looks for.)
    if (tier !== "unit" || file === "test/docs/tiers.test.ts") continue;
    const source = readFileSync(`${root}/${file}`, "utf8");
    expect(source, file).not.toMatch(/startTestServer|helpers\/browser|["']node:net["']/);
  }
  const withConsole = tierNames.filter((t) => tierSetup[t].console);
  expect(withConsole).toEqual(["browser"]);
  expect(tiers.get("test/console/console.test.ts")).toBe("browser");
  expect(tierSetup.unit).toEqual({ postgres: false, console: false });
});
