// Module hooks that run bin/gatehouse.js, the package's real executable, on the TypeScript
// sources: its import of ../dist/src/cli/main.js (what `npm run build` produces) resolves to
// src/cli/main.ts, so a test runs the code it is testing, built or not, in a process of its
// own.
//
// Synchronous hooks in the process's own thread (module.registerHooks), not the off-thread
// hooks of module.register that the reliability suites use (../reliability/child/ts-hooks.mjs):
// a command loads about 940 modules, and each one's resolve and load crossed to the hooks'
// thread and back. A `gatehouse auth status` took 1.8-1.9 s of CPU that way and 0.8-1.1 s
// this way (load 13-16 on 2 cores), and the CLI suites start tens of such processes.
//
// Types are stripped by Node itself (module.stripTypeScriptTypes, "transform" for the enums
// of gen/), and what it strips is kept on disk, one file per source text, so that a process
// rarely strips anything: node_modules/.cache/gatehouse-bin-hooks.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dist = new URL("../../dist/", import.meta.url).href;
const root = new URL("../../", import.meta.url).href;
const cacheDir = fileURLToPath(
  new URL("../../node_modules/.cache/gatehouse-bin-hooks/", import.meta.url),
);

/**
 * `<root>/dist/x.js` is `<root>/x.ts`, and `./x.js` is `./x.ts` where only the TypeScript
 * source exists (NodeNext style); everything else as Node resolves it.
 */
export function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (specifier.startsWith(".") && parent?.startsWith("file:")) {
    const target = new URL(specifier, parent);
    if (target.href.startsWith(dist)) {
      const source = new URL(root + target.href.slice(dist.length).replace(/\.js$/, ".ts"));
      if (existsSync(source)) return { url: source.href, shortCircuit: true };
    }
    if (target.href.endsWith(".js") && !existsSync(target)) {
      const ts = new URL(target.href.replace(/\.js$/, ".ts"));
      if (existsSync(ts)) return { url: ts.href, shortCircuit: true };
    }
  }
  return next(specifier, context);
}

/**
 * A load hook stripping a .ts file's types with `strip` (module.stripTypeScriptTypes), kept
 * under a key of the Node version (its stripper), the file's name and its text.
 */
export function loadWith(strip) {
  return function load(url, context, next) {
    if (!url.startsWith("file:") || !url.endsWith(".ts")) return next(url, context);
    const fileName = fileURLToPath(url);
    const source = readFileSync(fileName, "utf8");
    const key = createHash("sha256")
      .update(`${process.version}\0${fileName}\0${source}`)
      .digest("hex")
      .slice(0, 32);
    const cached = `${cacheDir}${key}.js`;
    if (existsSync(cached)) {
      return { format: "module", source: readFileSync(cached, "utf8"), shortCircuit: true };
    }
    const code = strip(source, { mode: "transform", sourceUrl: url });
    try {
      // Written aside and renamed: a process reading it sees the whole file or none.
      mkdirSync(cacheDir, { recursive: true });
      const aside = `${cached}.${process.pid}.tmp`;
      writeFileSync(aside, code);
      renameSync(aside, cached);
    } catch {
      // A read-only checkout: strip again next time.
    }
    return { format: "module", source: code, shortCircuit: true };
  };
}
