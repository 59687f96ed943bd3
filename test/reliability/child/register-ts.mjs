// `node --import ./register-ts.mjs <file.ts>`: install the hooks of ts-hooks.mjs, on the
// loading thread where Node allows it (registerHooks: about half the start-up CPU of a
// hooks thread, see ts-hooks.mjs), else on a thread of their own (register).
import * as module from "node:module";
import { hooks } from "./ts-hooks.mjs";

if (typeof module.registerHooks === "function") module.registerHooks(hooks);
else module.register("./ts-hooks.mjs", import.meta.url);
