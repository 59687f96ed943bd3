// `node --import ./register-bin.mjs bin/gatehouse.js ...`: install the hooks of bin-hooks.mjs.
import * as nodeModule from "node:module";
import { fileURLToPath } from "node:url";
import { binHooks } from "./bin-hooks.mjs";

// A Node without synchronous hooks is older than the package supports (old-node.test.ts runs
// one): bin/gatehouse.js then runs itself again on the project's own Node, with these flags,
// before it loads any TypeScript; nothing to install here.
if (nodeModule.registerHooks) {
  nodeModule.registerHooks(binHooks());
  // V8's compiled code of those modules kept on disk too (Node checks each entry against the
  // source it compiles): about a tenth less CPU a command (0.67-0.80 s of user time against
  // 0.79-0.89 s, six runs each, load 13-14).
  nodeModule.enableCompileCache?.(
    fileURLToPath(new URL("../../node_modules/.cache/gatehouse-bin-v8/", import.meta.url)),
  );
}
