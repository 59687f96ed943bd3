#!/usr/bin/env node
// docker's credential helper for registries whose token service is Gatehouse; set it up with
// `gatehouse auth configure-docker --registry <host>`, after `npm link` in the checkout put it
// on PATH (docs/registry.md). Compiled to dist/ by `npm run build`. Like bin/gatehouse.js, it
// hands over to the project's own Node when the one on PATH is too old (supported-node.js).
import { ensureSupportedNode } from "./supported-node.js";

await ensureSupportedNode();
const { credentialHelper } = await import("../dist/src/cli/auth/docker-credentials.js");
const { processIo } = await import("../dist/src/cli/cli-io.js");

let stdin = "";
if (process.argv[2] === "get" || process.argv[2] === "store" || process.argv[2] === "erase") {
  process.stdin.setEncoding("utf8");
  for await (const chunk of process.stdin) stdin += chunk;
}
process.exitCode = await credentialHelper(process.argv.slice(2), stdin, processIo);
