// Module hooks that run bin/gatehouse.js, the package's real executable, on the TypeScript
// sources: its import of ../dist/src/cli/main.js (what `npm run build` produces) resolves to
// src/cli/main.ts, so a test runs the code it is testing, built or not, in a process of its
// own. The hooks are ts-module-hooks.mjs's (shared with the reliability suites' children).
//
// Synchronous hooks in the process's own thread (module.registerHooks), not the off-thread
// hooks of module.register: a command loads about 940 modules, and each one's resolve and load
// crossed to the hooks' thread and back. A `gatehouse auth status` took 1.8-1.9 s of CPU that
// way and 0.8-1.1 s this way (load 13-16 on 2 cores), and the CLI suites start tens of such
// processes.
//
// Types are stripped by Node itself (module.stripTypeScriptTypes, "transform" for the enums
// of gen/), kept under a key of the Node version (its stripper) in
// node_modules/.cache/gatehouse-bin-hooks.
import { fileURLToPath } from "node:url";
import { typeScriptHooks } from "./ts-module-hooks.mjs";

/** The hooks for module.registerHooks, stripping with `strip` (module.stripTypeScriptTypes). */
export function binHooks(strip) {
  return typeScriptHooks({
    strip: (source, _fileName, url) => strip(source, { mode: "transform", sourceUrl: url }),
    stripperId: process.version,
    cacheDir: fileURLToPath(
      new URL("../../node_modules/.cache/gatehouse-bin-hooks/", import.meta.url),
    ),
    distOf: {
      dist: new URL("../../dist/", import.meta.url).href,
      root: new URL("../../", import.meta.url).href,
    },
  });
}
