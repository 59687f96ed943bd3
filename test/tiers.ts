import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

// The test suite in tiers (vitest projects, see vitest.config.ts), so that a run pays only for
// what its files need: building the console, starting PostgreSQL, launching Chromium. A file's
// tier follows from its directory and from what it imports, so a new file lands in a tier
// without being listed anywhere; test/docs/tiers.test.ts checks that every test file is in
// exactly one tier, and that every file using the shared PostgreSQL is in a tier that starts it.

/** The tiers, in the order `npm test` reports them. */
export const tierNames = ["unit", "api", "postgres", "browser", "reliability"] as const;
/** One tier of the suite. */
export type Tier = (typeof tierNames)[number];

/** What each tier's global setup provides (test/setup/). */
export const tierSetup: Record<Tier, { postgres: boolean; console: boolean }> = {
  unit: { postgres: false, console: false },
  api: { postgres: false, console: false },
  postgres: { postgres: true, console: false },
  browser: { postgres: false, console: true },
  // Those on PostgreSQL (its faults and stalls) run in the postgres tier, which starts it.
  reliability: { postgres: false, console: false },
};

/** Where test files live: `*.test.ts` anywhere in these directories. */
export const testRoots = ["test", "src", "bench"];

/** Every test file under the repository root `root`, as a relative path with `/`. */
export function listTestFiles(root: string): string[] {
  const out: string[] = [];
  for (const dir of testRoots) {
    let names: string[];
    try {
      names = readdirSync(join(root, dir), { recursive: true, encoding: "utf8" });
    } catch {
      continue; // a root that does not exist (bench/ may hold no tests)
    }
    for (const name of names) {
      if (name.endsWith(".test.ts") && !name.split(sep).includes("node_modules")) {
        out.push(
          relative(root, join(root, dir, name))
            .split(sep)
            .join("/"),
        );
      }
    }
  }
  return out.sort();
}

// A file uses the shared PostgreSQL through inject("pgAdminUrl"), helpers/postgres.ts (a
// database of its own), or test-server's `backends` / `backend: "postgres"` (a server on it).
// Whatever gets past these fails loudly in helpers/postgres.ts, in a tier without PostgreSQL.
const usesPostgres =
  /inject\(\s*["']pgAdminUrl["']|helpers\/postgres\.js|\bnewPgDatabase\b|\bbackends\b|backend:\s*["']postgres["']/;
// Sockets, servers or processes: an api test, not a unit test.
const usesSockets =
  /helpers\/(test-server|cli-sign-in|run-bin|run-cli|import-cli|lean-pair|replicas|oidc-issuer|hostile-idp|raw-grpc|raw-http|free-port|groups-clients|iam-clients|registry-clients|rest-client|h2c-server|webhook-sink)|["']node:(net|http|http2|https|tls|child_process|dgram)["']|\bfetch\(|\.listen\(|startServer|useTestServer/;

/** Whether a test file needs the shared PostgreSQL of the test run. */
export function needsPostgres(source: string): boolean {
  return usesPostgres.test(source);
}

/**
 * Each test file's tier, first rule that matches: whatever uses the shared PostgreSQL or
 * lives in test/postgres (postgres: only it starts one), then test/reliability, then the
 * console and anything driving Chromium (browser), then anything opening sockets, starting
 * servers or processes (api), and the rest: pure functions, in-process only (unit).
 */
export function classify(root: string): Map<string, Tier> {
  const tiers = new Map<string, Tier>();
  for (const file of listTestFiles(root)) {
    const source = readFileSync(join(root, file), "utf8");
    let tier: Tier;
    if (file.startsWith("test/postgres/") || needsPostgres(source)) tier = "postgres";
    else if (file.startsWith("test/reliability/")) tier = "reliability";
    else if (file.startsWith("test/console/") || /helpers\/browser\./.test(source)) {
      tier = "browser";
    } else if (usesSockets.test(source)) tier = "api";
    else tier = "unit";
    tiers.set(file, tier);
  }
  return tiers;
}

/** The files of one tier, from a classification. */
export function filesOf(tiers: Map<string, Tier>, tier: Tier): string[] {
  return [...tiers].filter(([, t]) => t === tier).map(([f]) => f);
}
