// Module hooks that let plain `node` (20, no type stripping) run the TypeScript sources, for
// the child processes of the reliability suites. dist/ may not exist before `npm test`, and
// building it with tsc costs about 9 s; transpiling each .ts file on its own with
// typescript's transpileModule costs about 4 s at start-up. vite's transformWithOxc (vite is
// what vitest runs on, so it is installed wherever the tests run) strips the types of all
// of src/ and gen/ in well under a second, as vitest itself does for the in-process suites.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { transformWithOxc } from "vite";

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
  const { code } = await transformWithOxc(readFileSync(fileName, "utf8"), fileName, {
    sourcemap: false,
  });
  return { format: "module", source: code, shortCircuit: true };
}
