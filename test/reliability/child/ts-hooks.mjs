// Module hooks that let plain `node` (20, no type stripping) run the TypeScript sources, for
// the child processes of the reliability suites. dist/ may not exist before `npm test`, and
// building it with tsc costs about 9 s; transpiling each .ts file on its own with
// typescript's transpileModule costs about 4 s at start-up. vite's transformWithOxc (vite is
// what vitest runs on, so it is installed wherever the tests run) strips the types of all
// of src/ and gen/ in well under a second, as vitest itself does for the in-process suites.
//
// What it strips is kept on disk (node_modules/.cache/gatehouse-ts-hooks, one file per source
// text): a suite starts tens of child processes (the CLI's suites, one a command), and each
// otherwise imported vite and stripped the same few hundred modules again (a `gatehouse --help`
// took 28 s at load 24 on 2 cores, 3 s of it importing vite). A process that finds every module
// there never imports vite at all.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
// The stripper's version is part of each key: a new vite may strip differently.
const viteVersion = JSON.parse(readFileSync(require.resolve("vite/package.json"), "utf8")).version;
const cacheDir = fileURLToPath(
  new URL("../../../node_modules/.cache/gatehouse-ts-hooks/", import.meta.url),
);

/** Resolve `./x.js` to `./x.ts` when only the TypeScript source exists (NodeNext style). */
export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (specifier.startsWith(".") && specifier.endsWith(".js") && parent?.startsWith("file:")) {
    const js = new URL(specifier, parent);
    const ts = new URL(specifier.replace(/\.js$/, ".ts"), parent);
    if (!existsSync(js) && existsSync(ts)) return { url: ts.href, shortCircuit: true };
  }
  return next(specifier, context);
}

/** Load a .ts file as an ES module, its types stripped. */
export async function load(url, context, next) {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) return next(url, context);
  const fileName = fileURLToPath(url);
  const source = readFileSync(fileName, "utf8");
  const key = createHash("sha256")
    .update(`${viteVersion}\0${fileName}\0${source}`)
    .digest("hex")
    .slice(0, 32);
  const cached = `${cacheDir}${key}.js`;
  if (existsSync(cached)) {
    return { format: "module", source: readFileSync(cached, "utf8"), shortCircuit: true };
  }
  const { transformWithOxc } = await import("vite");
  const { code } = await transformWithOxc(source, fileName, { sourcemap: false });
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
}
