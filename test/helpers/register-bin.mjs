// `node --import ./register-bin.mjs bin/gatehouse.js ...`: install the hooks of bin-hooks.mjs.
import { register } from "node:module";

register("./bin-hooks.mjs", import.meta.url);
