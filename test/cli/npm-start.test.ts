import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { freePort } from "../helpers/test-server.js";

// `npm start` becomes the server (exec), so stopping it by its PID stops the server: before,
// npm's shell kept the server running and the next start met a busy port.

const ready = async (url: string) =>
  fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
    (r) => r.status === 200,
    () => false,
  );

it("stops the server when npm start gets SIGTERM", { timeout: 120_000 }, async () => {
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
  });
  const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 90_000;
    while (!(await ready(url))) {
      if (Date.now() > deadline) throw new Error("npm start did not serve in time");
      await new Promise((r) => setTimeout(r, 200));
    }
    npm.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await ready(url)).toBe(false);
  } finally {
    npm.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
