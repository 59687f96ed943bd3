// The one loader of TypeScript sources for the processes tests start: synchronous module hooks
// (module.registerHooks) that resolve `./x.js` to `./x.ts` (NodeNext style) and load a .ts
// file with its types stripped. Stripped text is kept on disk, one file per source text, so
// that a process rarely strips anything (a suite starts tens of child processes, each loading
// hundreds of modules). Two users: bin-hooks.mjs (which also maps ../dist/src/x.js to
// src/x.ts) and ../reliability/child/ts-hooks.mjs, both stripping with rolldown (below).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/**
 * The stripper both users share: rolldown's transformSync (the one under vite's
 * transformWithOxc; vite is what vitest runs on, so it is installed wherever the tests run),
 * loaded only on a cache miss. Node's own module.stripTypeScriptTypes is not enough: gen/
 * declares enums, which need its "transform" mode, and Node 26 has only "strip".
 */
export function rolldownStrip(source, fileName) {
  const { transformSync } = require("rolldown/utils");
  const { code, errors } = transformSync(fileName, source, { sourcemap: false, lang: "ts" });
  if (errors.length > 0) {
    throw new Error(`${fileName}: ${errors.map((e) => e.message ?? String(e)).join("; ")}`);
  }
  return code;
}

/** rolldownStrip's version, part of each cache key: a new rolldown may strip differently. */
export const rolldownStripperId = `rolldown ${
  JSON.parse(readFileSync(require.resolve("rolldown/package.json"), "utf8")).version
}`;

/** The cache directory of stripped modules both users share (same stripper, same keys). */
export const strippedCacheDir = fileURLToPath(
  new URL("../../node_modules/.cache/gatehouse-ts-hooks/", import.meta.url),
);

/**
 * Module hooks `{resolve, load}` for module.registerHooks (synchronous, on the loading thread).
 *
 * - `strip(source, fileName, url)`: the module's JavaScript, its types stripped; called only
 *   when the cache has no copy, so a stripper loaded inside it is loaded only then.
 * - `stripperId`: names the stripper and its version, part of every cache key (a new one may
 *   strip differently).
 * - `cacheDir`: the cache's directory (a path ending in "/").
 * - `distOf` (optional): `{dist, root}`, URLs ending in "/": a relative import of
 *   `<dist>x.js` resolves to `<root>x.ts` where that source exists (the package's built
 *   modules run from their sources).
 */
export function typeScriptHooks({ strip, stripperId, cacheDir, distOf }) {
  return {
    resolve(specifier, context, next) {
      const parent = context.parentURL;
      if (specifier.startsWith(".") && parent?.startsWith("file:")) {
        const target = new URL(specifier, parent);
        if (distOf && target.href.startsWith(distOf.dist)) {
          const rest = target.href.slice(distOf.dist.length).replace(/\.js$/, ".ts");
          const source = new URL(distOf.root + rest);
          if (existsSync(source)) return { url: source.href, shortCircuit: true };
        }
        if (target.href.endsWith(".js") && !existsSync(target)) {
          const ts = new URL(target.href.replace(/\.js$/, ".ts"));
          if (existsSync(ts)) return { url: ts.href, shortCircuit: true };
        }
      }
      return next(specifier, context);
    },
    load(url, context, next) {
      if (!url.startsWith("file:") || !url.endsWith(".ts")) return next(url, context);
      const fileName = fileURLToPath(url);
      const source = readFileSync(fileName, "utf8");
      const key = createHash("sha256")
        .update(`${stripperId}\0${fileName}\0${source}`)
        .digest("hex")
        .slice(0, 32);
      const cached = `${cacheDir}${key}.js`;
      if (existsSync(cached)) {
        return { format: "module", source: readFileSync(cached, "utf8"), shortCircuit: true };
      }
      const code = strip(source, fileName, url);
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
    },
  };
}
