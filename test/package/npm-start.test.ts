import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { childOutput } from "../helpers/child-output.js";
import { freePort } from "../helpers/test-server.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

// `npm start` becomes the server (exec), so stopping it by its PID stops the server: before,
// npm's shell kept the server running and the next start met a busy port.

const ready = async (url: string) =>
  fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
    (r) => r.status === 200,
    () => false,
  );

it("stops the server when npm start gets SIGTERM", { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-start-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const npm = spawn("npm", ["start", "--silent"], {
    env: {
      ...process.env,
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_DB: join(dir, "gatehouse.db"),
      GATEHOUSE_LOG_LEVEL: "warn",
    },
    stdio: "ignore",
    // A group of its own, so that a failed test ends all of it (npm, the build, the server);
    // the test's own SIGTERM still goes to npm's PID alone, as a supervisor's would.
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
  try {
    // A hang guard, not a bound on speed: on a fresh checkout this is a whole build (tsc and
    // the console), which took over 90 s beside the image's own build at load 17.
    const deadline = Date.now() + 240_000;
    while (!(await ready(url))) {
      if (Date.now() > deadline) throw new Error("npm start did not serve in time");
      await new Promise((r) => setTimeout(r, 200));
    }
    npm.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await ready(url)).toBe(false);
  } finally {
    // Killing npm alone left the server it had started serving (its parent gone): seen after
    // a timed-out run at load 17, still listening minutes later.
    try {
      process.kill(-(npm.pid as number), "SIGKILL");
    } catch {
      // The group is gone already: the test passed.
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Run an npm script of the checkout to its end: exit code and output. */
function npmRun(args: string[], env: Record<string, string> = {}) {
  return childOutput(
    spawn("npm", args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] }),
  );
}

// After the test above, the checkout is built: a second build rebuilds nothing, and a wrong
// setting is refused before any build starts (it cost a 20-30 s build per try, issue 43).
it("a second build rebuilds nothing", { timeout: 120_000 }, async () => {
  const info = join(root, "dist", ".tsbuildinfo");
  const before = statSync(info).mtimeMs;
  const build = await npmRun(["run", "build", "--silent"]);
  expect(build.code).toBe(0);
  expect(build.stdout).toMatch(/console unchanged in /);
  expect(statSync(info).mtimeMs).toBe(before);
});

it("refuses a bad setting before it builds anything", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-start-"));
  try {
    const start = await npmRun(["start", "--silent"], {
      GATEHOUSE_PORT: "not-a-port",
      GATEHOUSE_DB: join(dir, "gatehouse.db"),
    });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain(
      'GATEHOUSE_PORT (--port): "not-a-port" is not an integer between',
    );
    // No build ran: neither tsc nor the console build said anything.
    expect(start.stdout).not.toMatch(/console (built|unchanged)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
