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
// Types are stripped by rolldown, as for the reliability suites' children, into the same cache
// (ts-module-hooks.mjs says why not Node's own stripper).
import {
  rolldownStrip,
  rolldownStripperId,
  strippedCacheDir,
  typeScriptHooks,
} from "./ts-module-hooks.mjs";

/** The hooks for module.registerHooks. */
export function binHooks() {
  return typeScriptHooks({
    strip: rolldownStrip,
    stripperId: rolldownStripperId,
    cacheDir: strippedCacheDir,
    distOf: {
      dist: new URL("../../dist/", import.meta.url).href,
      root: new URL("../../", import.meta.url).href,
    },
  });
}
