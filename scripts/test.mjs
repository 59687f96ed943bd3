// `npm test`: the type check (`npm run typecheck`) beside the suite (`vitest run`, with the
// arguments given after `--`), not before it. The check (TypeScript 7's tsc) takes about 2 s
// when nothing changed and 9 s from nothing (15 s of CPU, on its own threads); before the
// suite, it held up the suite's start for that long. Its output is printed after the suite's, and `npm test` fails if either fails.
import { spawn } from "node:child_process";

/** A child's exit code (1 when a signal ended it). */
const exited = (child) =>
  new Promise((resolve) => {
    child.on("error", (err) => {
      console.error(`npm test: ${err.message}`);
      resolve(1);
    });
    child.on("close", (code) => resolve(code ?? 1));
  });

const typecheck = spawn("npm", ["run", "--silent", "typecheck"], {
  stdio: ["ignore", "pipe", "pipe"],
});
const said = [];
typecheck.stdout.on("data", (chunk) => said.push(chunk));
typecheck.stderr.on("data", (chunk) => said.push(chunk));
const typed = exited(typecheck);

// npm puts node_modules/.bin on PATH for its scripts.
const suite = await exited(
  spawn("vitest", ["run", ...process.argv.slice(2)], { stdio: "inherit" }),
);
const types = await typed;
if (types !== 0) {
  process.stderr.write(Buffer.concat(said));
  console.error(`npm test: the type check failed (npm run typecheck exited ${types})`);
}
process.exit(suite !== 0 ? suite : types);
