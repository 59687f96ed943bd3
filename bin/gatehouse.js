#!/usr/bin/env node
// The gatehouse command; the code is compiled to dist/ by `npm run build`. The Node.js version
// is checked before that code (and better-sqlite3's native module) is loaded: see supported-node.js.
import { ensureSupportedNode } from "./supported-node.js";

await ensureSupportedNode();
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
