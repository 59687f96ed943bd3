#!/usr/bin/env node
// docker's credential helper for registries whose token service is Gatehouse; set it up with
// `gatehouse auth configure-docker --registry <host>`. Compiled to dist/ by `npm run build`.
import { credentialHelper } from "../dist/src/cli/auth/docker-credentials.js";
import { processIo } from "../dist/src/cli/cli-io.js";

let stdin = "";
if (process.argv[2] === "get" || process.argv[2] === "store" || process.argv[2] === "erase") {
  process.stdin.setEncoding("utf8");
  for await (const chunk of process.stdin) stdin += chunk;
}
process.exitCode = await credentialHelper(process.argv.slice(2), stdin, processIo);
