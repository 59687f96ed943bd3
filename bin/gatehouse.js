#!/usr/bin/env node
// The gatehouse command; the code is compiled to dist/ by `npm run build`. The Node.js version
// is checked before that code (and better-sqlite3's native module) is loaded: see supported-node.js.
import { availableParallelism } from "node:os";
import { ensureSupportedNode } from "./supported-node.js";

await ensureSupportedNode();
// On one CPU, `serve` restarts itself at once with V8's single-threaded collector (same
// process: execve; src/node-flags.ts, oneCpuRestartFlags, says why). Only its flags are
// loaded first; a Node without process.execve (before 22.15) keeps the helper threads.
if (process.argv[2] === "serve" && typeof process.execve === "function") {
  const flags = await import("../dist/src/node-flags.js").catch(() => undefined);
  const extra = flags?.oneCpuRestartFlags?.(availableParallelism(), process.execArgv) ?? [];
  if (extra.length > 0) {
    process.execve(
      process.execPath,
      [process.execPath, ...extra, ...process.execArgv, ...process.argv.slice(1)],
      process.env,
    );
  }
}
let main;
try {
  ({ main } = await import("../dist/src/cli/main.js"));
} catch (err) {
  if (
    err?.code !== "ERR_MODULE_NOT_FOUND" ||
    !String(err.message).includes("dist/src/cli/main.js")
  ) {
    throw err;
  }
  process.stderr.write("gatehouse: not built yet: run `npm run build` in the checkout first.\n");
  process.exit(2);
}
process.exitCode = await main(process.argv.slice(2));
