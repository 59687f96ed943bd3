import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import config from "../../vitest.config.js";
import {
  classifyOnce,
  type Import,
  importsOf,
  listTestFiles,
  reachOf,
  tierNames,
  tierOf,
  tierSetup,
} from "../tiers.js";

// The tiers cover the whole suite: a test file that no tier includes would never run, not
// even in `npm test`, and a file that needs PostgreSQL in a tier without it would fail late.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** A file's code without its comments, roughly: what the text checks below read. */
const code = (file: string) =>
  readFileSync(`${root}/${file}`, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`])\/\/.*$/gm, "$1");

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
  const tiers = classifyOnce(root);
  // Read independently of the imports the tiers come from: what the code says it uses. A file
  // that spells `backend: "postgres"` without importing `postgresBackend` fails here (and in
  // helpers/postgres.ts when run), rather than in a tier without PostgreSQL.
  const usesPostgres =
    /\bnewPgDatabase\b|pgAdminUrl|\bbackends\b|\bpostgresBackend\b|backend:\s*["']postgres["']/;
  const stranded = [...tiers]
    .filter(([file]) => file !== "test/docs/tiers.test.ts" && usesPostgres.test(code(file)))
    .filter(([, tier]) => !tierSetup[tier].postgres);
  expect(stranded).toEqual([]);
  // And the rule sees the suites known to need it.
  expect(tiers.get("test/store/postgres-store.test.ts")).toBe("postgres");
  expect(tiers.get("test/postgres/api-on-postgres.test.ts")).toBe("postgres");
  expect(tiers.get("test/events/webhook-fairness.test.ts")).toBe("postgres");
  // A comment is not an import: this one starts its own PostgreSQL and says "backends" only
  // in prose (a regex over the text put it in the postgres tier, which then started one more).
  expect(tiers.get("test/reliability/postgres-faults.test.ts")).toBe("reliability");
});

it("keeps sockets and global setup out of the unit tier, and builds the console only for browser", () => {
  const tiers = classifyOnce(root);
  for (const [file, tier] of tiers) {
    // (This file names the patterns it looks for.) A socket's listen names a port or options:
    // `planes.listen()` of fakes (test/planes/planes.test.ts) opens nothing.
    if (tier !== "unit" || file === "test/docs/tiers.test.ts") continue;
    expect(code(file), file).not.toMatch(
      /startTestServer|useTestServer|helpers\/browser|["']node:(net|http|http2|https|tls|child_process)["']|\.listen\(\s*[0-9{]/,
    );
  }
  const withConsole = tierNames.filter((t) => tierSetup[t].console);
  expect(withConsole).toEqual(["browser"]);
  expect(tiers.get("test/console/console.test.ts")).toBe("browser");
  expect(tierSetup.unit).toEqual({ postgres: false, console: false });
});

it("classifies once a process for the same test files, and again when they change", () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-tiers-"));
  try {
    mkdirSync(join(dir, "test"));
    writeFileSync(join(dir, "test/a.test.ts"), 'import { it } from "vitest";\n');
    const first = classifyOnce(dir);
    expect([...first]).toEqual([["test/a.test.ts", "unit"]]);
    // vitest.config.ts's seven evaluations a run get the one classification.
    expect(classifyOnce(dir)).toBe(first);
    writeFileSync(join(dir, "test/b.test.ts"), 'import http from "node:http";\n');
    const second = classifyOnce(dir);
    expect(second).not.toBe(first);
    expect(second.get("test/b.test.ts")).toBe("api");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("a file's tier, from what it imports", () => {
  // Our modules' imports, read once for the cases below (the made-up file's are not kept).
  const cache = new Map<string, Import[]>();
  const tierOfSource = (source: string, file = "test/x/new.test.ts") => {
    const tier = tierOf(file, reachOf(root, file, cache, source));
    cache.delete(file);
    return tier;
  };

  it("reads the imports that remain at run time, with the names they bind", () => {
    const source = [
      'import type { Server } from "node:http";',
      'import { type Socket, isIP } from "node:net";',
      'import def, { a as b, c } from "./y.js";',
      'import * as ns from "../helpers/test-server.js";',
      'export { z } from "./z.js";',
      'export type { W } from "./w.js";',
      'const later = await import("node:tls");',
      "const x = 1 /* import { no } from 'node:dgram' */;",
    ].join("\n");
    expect(importsOf(root, "test/x/new.test.ts", source)).toEqual([
      { from: "node:net", names: ["isIP"] },
      { from: "./y.js", names: ["a", "c", "default"] },
      { from: "../helpers/test-server.js", names: ["*"], file: "test/helpers/test-server.ts" },
      { from: "./z.js", names: ["z"] },
      { from: "node:tls", names: [] },
    ]);
  });

  it("is unit when nothing it reaches opens a socket, whatever its text says", () => {
    const source = [
      'import { expect, it } from "vitest";',
      'import type { Server } from "node:http";',
      'import { isUid } from "../../src/uid.js";',
      '// await fetch("http://127.0.0.1/"); startTestServer(); import("node:net")',
      'it("is pure", () => expect(isUid("x")).toBe(false));',
    ].join("\n");
    expect(tierOfSource(source)).toBe("unit");
  });

  it("is api when a helper it imports, or a helper's helper, opens a socket", () => {
    // rest-client imports nothing that listens itself: test-server, through free-port, does.
    expect(tierOfSource('import { restCall } from "../helpers/rest-client.js";')).toBe("unit");
    expect(tierOfSource('import { freePort } from "../helpers/test-server.js";')).toBe("api");
    expect(tierOfSource('import { runBin } from "../helpers/run-bin.js";')).toBe("api");
  });

  it("is unit for the API in memory and node:net's address checks, api for what listens", () => {
    expect(tierOfSource('import { useInMemory } from "../helpers/in-memory.js";')).toBe("unit");
    expect(tierOfSource('import { isIP, BlockList } from "node:net";')).toBe("unit");
    expect(tierOfSource('import { isIP, createServer } from "node:net";')).toBe("api");
    expect(tierOfSource('import "node:net";')).toBe("api");
    expect(tierOfSource('import Fastify from "fastify";')).toBe("api");
    // The same API on PostgreSQL's store asks for the run's PostgreSQL.
    expect(tierOfSource('import { storeOn } from "../helpers/in-memory-backends.js";')).toBe(
      "postgres",
    );
  });

  it("is postgres when it asks for the run's PostgreSQL by name, browser when it drives Chromium", () => {
    const server = (names: string) => `import { ${names} } from "../helpers/test-server.js";`;
    expect(tierOfSource(server("startTestServer"))).toBe("api");
    expect(tierOfSource(server("backends, startTestServer"))).toBe("postgres");
    expect(tierOfSource(server("postgresBackend, useTestServer"))).toBe("postgres");
    expect(tierOfSource('import { newPgDatabase } from "../helpers/postgres.js";')).toBe(
      "postgres",
    );
    expect(tierOfSource('import { inject } from "vitest";')).toBe("postgres");
    expect(tierOfSource('import { launchBrowser } from "../helpers/browser.js";')).toBe("browser");
    // The directory decides first for reliability; PostgreSQL decides before it.
    expect(tierOfSource(server("startTestServer"), "test/reliability/new.test.ts")).toBe(
      "reliability",
    );
    expect(tierOfSource(server("backends"), "test/reliability/new.test.ts")).toBe("postgres");
    expect(tierOfSource(server("startTestServer"), "test/package/new.test.ts")).toBe("package");
  });
});

it("builds and starts the package through npm only in the package tier, which CI's other Node lines leave out", () => {
  const tiers = classifyOnce(root);
  // npm's scripts run the project's own Node whatever Node runs vitest: a file that runs npm
  // tests the same thing on every line, and two lines side by side would build one dist/.
  const runsNpm = /spawn(?:Sync)?\(\s*["']npm["']/;
  const elsewhere = [...tiers].filter(
    ([file, tier]) => tier !== "package" && runsNpm.test(code(file)),
  );
  expect(elsewhere).toEqual([]);
  expect(tiers.get("test/package/image-layout.test.ts")).toBe("package");
  const ci = readFileSync(`${root}/.ci/run`, "utf8");
  const lines = /vitest\.mjs run ([^\n]*)/.exec(ci)?.[1] ?? "";
  expect(lines).toContain("--project api");
  expect(lines).not.toContain("--project package");
});
