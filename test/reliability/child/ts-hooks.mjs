// Module hooks that let `node` run the TypeScript sources, for the child processes of the
// reliability suites (and, through bin-hooks.mjs, the CLI's). dist/ may not exist before
// `npm test`, and building it with tsc costs about 9 s; transpiling each .ts file on its own
// with typescript's transpileModule costs about 4 s at start-up. rolldown's transformSync (the
// stripper under vite's transformWithOxc; vite is what vitest runs on, so it is installed
// wherever the tests run) strips the types of all of src/ and gen/ in well under a second, as
// vitest itself does for the in-process suites. Node's own type stripping is not enough: gen/
// declares enums.
//
// What it strips is kept on disk (node_modules/.cache/gatehouse-ts-hooks, one file per source
// text): a suite starts tens of child processes (the CLI's suites, one a command), and each
// otherwise stripped the same few hundred modules again (a `gatehouse --help` took 28 s at load
// 24 on 2 cores, 3 s of it importing vite). A process that finds every module there never
// loads the stripper at all.
//
// The hooks are synchronous (`hooks`, for module.registerHooks: Node 22.15 and later), so they
// run on the loading thread; `resolve` and `load` wrap them for module.register, whose hooks
// run on a thread of their own and answer each module by message. Loading the server's
// modules cost a child 1.4-1.7 s of CPU through register and 0.77-0.84 s through
// registerHooks (load average 15, each measured three times, the cache full).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
// The stripper's version is part of each key: a new rolldown may strip differently.
const stripperVersion = JSON.parse(
  readFileSync(require.resolve("rolldown/package.json"), "utf8"),
).version;
const cacheDir = fileURLToPath(
  new URL("../../../node_modules/.cache/gatehouse-ts-hooks/", import.meta.url),
);

/** `source` (the text of `fileName`) with its types stripped, from the cache or stripped now. */
function strip(fileName, source) {
  const key = createHash("sha256")
    .update(`rolldown ${stripperVersion}\0${fileName}\0${source}`)
    .digest("hex")
    .slice(0, 32);
  const cached = `${cacheDir}${key}.js`;
  if (existsSync(cached)) return readFileSync(cached, "utf8");
  const { transformSync } = require("rolldown/utils");
  const { code, errors } = transformSync(fileName, source, { sourcemap: false, lang: "ts" });
  if (errors.length > 0) {
    throw new Error(`${fileName}: ${errors.map((e) => e.message ?? String(e)).join("; ")}`);
  }
  try {
    // Written aside and renamed: a process reading it sees the whole file or none.
    mkdirSync(cacheDir, { recursive: true });
    const aside = `${cached}.${process.pid}.tmp`;
    writeFileSync(aside, code);
    renameSync(aside, cached);
  } catch {
    // A read-only checkout: strip again next time.
  }
  return code;
}

/** The hooks for module.registerHooks: synchronous, on the thread that loads. */
export const hooks = {
  /** Resolve `./x.js` to `./x.ts` when only the TypeScript source exists (NodeNext style). */
  resolve(specifier, context, next) {
    const parent = context.parentURL;
    if (specifier.startsWith(".") && specifier.endsWith(".js") && parent?.startsWith("file:")) {
      const js = new URL(specifier, parent);
      const ts = new URL(specifier.replace(/\.js$/, ".ts"), parent);
      if (!existsSync(js) && existsSync(ts)) return { url: ts.href, shortCircuit: true };
    }
    return next(specifier, context);
  },
  /** Load a .ts file as an ES module, its types stripped. */
  load(url, context, next) {
    if (!url.startsWith("file:") || !url.endsWith(".ts")) return next(url, context);
    const fileName = fileURLToPath(url);
    const source = strip(fileName, readFileSync(fileName, "utf8"));
    return { format: "module", source, shortCircuit: true };
  },
};

/** hooks.resolve for module.register. */
export async function resolve(specifier, context, next) {
  return hooks.resolve(specifier, context, next);
}

/** hooks.load for module.register. */
export async function load(url, context, next) {
  return hooks.load(url, context, next);
}
