// `node --import ./register-ts.mjs <file.ts>`: install the hooks of ts-hooks.mjs, on the
// loading thread where Node allows it (registerHooks: about half the start-up CPU of a
// hooks thread, see ts-hooks.mjs), else on a thread of their own (register). The suites'
// server processes (reliability, replicas) start with it, and so do vitest's workers, which
// load the test files with Node's own loader (vitest.config.ts).
import * as module from "node:module";
import { fileURLToPath } from "node:url";
import { hooks } from "./ts-hooks.mjs";

if (typeof module.registerHooks === "function") module.registerHooks(hooks);
else module.register("./ts-hooks.mjs", import.meta.url);
// V8's compiled code of the modules kept on disk too, as register-bin.mjs keeps the CLI's (Node
// checks each entry against the source it compiles): loading the server's modules took 0.95 s
// of CPU against 1.13 s (six runs each, alternating, load 7-11). The suites start servers,
// replicas and crashed servers in processes of their own tens of times a run.
module.enableCompileCache?.(
  fileURLToPath(new URL("../../../node_modules/.cache/gatehouse-ts-v8/", import.meta.url)),
);
