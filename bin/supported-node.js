// Make sure the gatehouse command runs on a Node.js it supports, before anything native is
// loaded: better-sqlite3 built for Node 24 crashes an older Node with a segfault and no word.
// Plain JavaScript without dependencies, so that it runs on any Node still in use.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = new URL("../", import.meta.url);

/** The lowest Node.js version the package supports, from package.json's engines.node (">=22.12"). */
export function minimumNode() {
  const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
  const m = /^>=\s*(\d+)(?:\.(\d+))?/.exec(pkg.engines?.node ?? "");
  if (!m) throw new Error('package.json: engines.node must read ">=major.minor"');
  return [Number(m[1]), Number(m[2] ?? 0)];
}

/** Whether the Node.js version `version` ("v20.20.2") is at least [major, minor]. */
export function isAtLeast(version, [major, minor]) {
  const [have, haveMinor] = version.replace(/^v/, "").split(".").map(Number);
  return have > major || (have === major && haveMinor >= minor);
}

/**
 * Return when this Node.js is supported. Otherwise run this same command on the project's own
 * Node (the devDependency `node`, which `npm ci` installs in node_modules) and exit with its
 * exit code; without one, say which Node is needed and how to get it, and exit 2.
 */
export async function ensureSupportedNode() {
  const needed = minimumNode();
  if (isAtLeast(process.version, needed)) return;
  const own = fileURLToPath(new URL("node_modules/node/bin/node", root));
  // The project's own Node runs this check too; never hand over to the Node running it.
  if (existsSync(own) && own !== process.execPath) {
    process.exit(await runOn(own));
  }
  const want = `${needed[0]}.${needed[1]}`;
  process.stderr.write(
    `gatehouse: needs Node.js ${want} or newer; this is Node.js ${process.version} (${process.execPath}).\n` +
      "In a checkout, run `npm ci`: it installs the project's own Node (node_modules/.bin/node),\n" +
      `which this command then uses by itself. Elsewhere, install Node.js ${needed[0]} or newer\n` +
      "(https://nodejs.org/en/download, or `nvm install --lts`).\n",
  );
  process.exit(2);
}

/** Run this process's command line on `node`; resolve to the exit code to leave with. */
function runOn(node) {
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], { stdio: "inherit" });
  // A supervisor's signal reaches only this process: pass it on. Ctrl-C on a terminal reaches
  // the child by itself (the whole foreground group gets it), and a second SIGINT would cut
  // serve's graceful stop short, so SIGINT is passed on only when there is no terminal.
  const signals = ["SIGTERM", "SIGHUP", "SIGINT"];
  for (const signal of signals) {
    process.on(signal, () => {
      if (signal === "SIGINT" && process.stdin.isTTY) return;
      child.kill(signal);
    });
  }
  return new Promise((resolve) => {
    child.once("error", (err) => {
      process.stderr.write(`gatehouse: cannot run ${node}: ${err.message}\n`);
      resolve(2);
    });
    child.once("exit", (code, signal) => {
      if (signal) {
        // End by the same signal, as a shell expects of the command it ran.
        for (const s of signals) process.removeAllListeners(s);
        process.kill(process.pid, signal);
      }
      resolve(code ?? 1);
    });
  });
}
