// A Gatehouse server process from the TypeScript sources: `gatehouse serve`, as
// bin/gatehouse.js runs it from dist/, configured by GATEHOUSE_* variables.
import { main } from "../../../src/cli/main.js";

process.exitCode = await main(["serve", ...process.argv.slice(2)]);
