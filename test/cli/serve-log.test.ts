import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { bin, runBin } from "../helpers/run-bin.js";
import { freePort } from "../helpers/test-server.js";

// The start log tells a newcomer where the console is and, on a fresh database, the one
// command that makes the server usable.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-serve-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string; console?: string });

/** A port and the environment that serves on it from the database `name` of this file's dir. */
async function served(name: string) {
  const port = await freePort();
  const db = join(dir, name);
  return {
    port,
    env: { GATEHOUSE_HOST: "127.0.0.1", GATEHOUSE_PORT: String(port), GATEHOUSE_DB: db },
  };
}

it("names the console URL, and on an empty database the bootstrap command", {
  timeout: 120_000,
}, async () => {
  const { port, env } = await served("gatehouse.db");
  const serve = () =>
    runBin(["serve"], env, { stopWhenOut: (out) => out.includes('"gatehouse listening"') });
  const first = lines((await serve()).stdout);
  const listening = first.find((l) => l.msg === "gatehouse listening");
  expect(listening?.console).toBe(`http://localhost:${port}/console/`);
  expect(
    first.some((l) => /no organization yet: .*gatehouse\.js bootstrap --org/.test(l.msg)),
  ).toBe(true);

  const boot = await runBin(["bootstrap", "--org", "acme"], env);
  expect(boot.code).toBe(0);
  const second = lines((await serve()).stdout);
  expect(second.some((l) => l.msg === "gatehouse listening")).toBe(true);
  expect(second.some((l) => /no organization yet/.test(l.msg))).toBe(false);
});

// On one CPU, V8's collector helper threads only take the main thread's CPU from it:
// `gatehouse serve` restarts itself, the same process, with --single-threaded-gc
// (src/node-flags.ts); with more CPUs it keeps them.
it("runs with V8's single-threaded collector on one CPU, and with its helper threads on more", {
  timeout: 120_000,
}, async () => {
  const { env } = await served("one-cpu.db");
  /** The serving process's command line, read once it listens (ps shows the same). */
  const servedWith = async (oneCpu: boolean) => {
    let pid = 0;
    let argv: string[] = [];
    const run = await runBin(["serve"], env, {
      oneCpu,
      onStart: (child) => {
        pid = child.pid!;
      },
      stopWhenOut: (out) => {
        if (!out.includes('"gatehouse listening"')) return false;
        argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        return true;
      },
    });
    expect(run.stdout).toContain('"gatehouse listening"');
    return argv;
  };
  const one = await servedWith(true);
  expect(one).toContain("--single-threaded-gc");
  // Restarted with it, not started again: what it was started with is all still there.
  expect(one).toEqual(expect.arrayContaining(["--import", bin, "serve"]));
  if (availableParallelism() > 1)
    expect(await servedWith(false)).not.toContain("--single-threaded-gc");
});
