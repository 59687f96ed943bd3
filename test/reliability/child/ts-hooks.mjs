// Module hooks that let `node` run the TypeScript sources, for the suites' child processes
// and vitest's workers (register-ts.mjs): ../../helpers/ts-module-hooks.mjs's (shared with
// the CLI's bin-hooks.mjs), stripping with rolldown. dist/ may not exist before `npm test`,
// and building it costs a few seconds (9 s when tsc still type-checked it); transpiling each
// .ts file on its own with TypeScript 5's transpileModule (7 has no such API) cost about 4 s
// at start-up. rolldown's transformSync (the stripper under vite's transformWithOxc; vite is
// what vitest runs on, so it is installed wherever the tests run) strips the types of all of
// src/ and gen/ in well under a second.
// Node's own type stripping is not enough: gen/ declares enums.
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
import {
  rolldownStrip,
  rolldownStripperId,
  strippedCacheDir,
  typeScriptHooks,
} from "../../helpers/ts-module-hooks.mjs";

/** The hooks for module.registerHooks: synchronous, on the thread that loads. */
export const hooks = typeScriptHooks({
  strip: rolldownStrip,
  stripperId: rolldownStripperId,
  cacheDir: strippedCacheDir,
});

/** hooks.resolve for module.register. */
export async function resolve(specifier, context, next) {
  return hooks.resolve(specifier, context, next);
}

/** hooks.load for module.register. */
export async function load(url, context, next) {
  return hooks.load(url, context, next);
}
