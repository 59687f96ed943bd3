// Module hooks that run bin/gatehouse.js, the package's real executable, on the TypeScript
// sources: its import of ../dist/src/cli/main.js (what `npm run build` produces) resolves to
// src/cli/main.ts, so a test runs the code it is testing, built or not, in a process of its
// own. The types are stripped by the hooks the reliability suites use (see ts-hooks.mjs).
import { existsSync } from "node:fs";
import { resolve as resolveTs } from "../reliability/child/ts-hooks.mjs";

export { load } from "../reliability/child/ts-hooks.mjs";

const dist = new URL("../../dist/", import.meta.url).href;
const root = new URL("../../", import.meta.url).href;

/** `<root>/dist/x.js` is `<root>/x.ts`; everything else as ts-hooks.mjs resolves it. */
export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (specifier.startsWith(".") && parent?.startsWith("file:")) {
    const target = new URL(specifier, parent).href;
    if (target.startsWith(dist)) {
      const source = new URL(root + target.slice(dist.length).replace(/\.js$/, ".ts"));
      if (existsSync(source)) return { url: source.href, shortCircuit: true };
    }
  }
  return resolveTs(specifier, context, next);
}
