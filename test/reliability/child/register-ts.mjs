// `node --import ./register-ts.mjs <file.ts>`: install the hooks of ts-hooks.mjs.
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
