#!/usr/bin/env node
// The gatehouse command; the code is compiled to dist/ by `npm run build`.
import { main } from "../dist/src/cli/main.js";

process.exitCode = await main(process.argv.slice(2));
