import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { childOutput } from "../helpers/child-output.js";
import { freePort } from "../helpers/test-server.js";
import { expectBootstrapOutput } from "./bootstrap-output.js";

// `node bin/gatehouse.js bootstrap` on the machine's Node 20 crashed with a segfault and no
// word (better-sqlite3, built for the project's Node 24, loaded into Node 20), leaving an
// empty owner.json behind the shell's redirect. The command now checks the Node version before
// loading anything native, and runs itself on the project's own Node from node_modules.

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(root, "bin/gatehouse.js");
const register = fileURLToPath(new URL("../helpers/register-bin.mjs", import.meta.url));

/** A `node` older than the package supports, on PATH or where distributions put it. */
function findOldNode(): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/local/bin", "/usr/bin"];
  for (const dir of dirs) {
    if (dir === "" || dir.includes("node_modules")) continue;
    const node = join(dir, "node");
    if (!existsSync(node)) continue;
    const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
    if (Number(version.slice(1).split(".")[0]) < 22) return node;
  }
  return undefined;
}

const oldNode = findOldNode();
if (!oldNode) {
  console.warn("old-node.test.ts: SKIPPED: no Node.js older than 22 on this machine");
}

const dir = mkdtempSync(join(tmpdir(), "gatehouse-old-node-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run `<node> [--import hooks] <script> <argv>` with a clean environment. */
function run(node: string, args: string[], env: Record<string, string> = {}) {
  return childOutput(
    spawn(node, args, {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

describe.skipIf(!oldNode)("bin/gatehouse.js on a Node older than 22", { timeout: 60_000 }, () => {
  const node = oldNode as string;

  it("bootstrap runs on the project's own Node and prints only the JSON", async () => {
    const db = join(dir, "boot.db");
    const r = await run(
      node,
      ["--no-warnings", "--import", register, bin, "bootstrap", "--org", "acme"],
      {
        GATEHOUSE_DB: db,
      },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expectBootstrapOutput(r.stdout);
  });

  it("serve stops gracefully on a SIGTERM sent to the command's own process", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(node, ["--no-warnings", "--import", register, bin, "serve"], {
      env: {
        PATH: process.env.PATH ?? "",
        GATEHOUSE_HOST: "127.0.0.1",
        GATEHOUSE_PORT: String(port),
        GATEHOUSE_DB: join(dir, "serve.db"),
        GATEHOUSE_LOG_LEVEL: "silent",
      },
      stdio: "ignore",
    });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const ready = () =>
      fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
    try {
      const deadline = Date.now() + 30_000;
      while (!(await ready())) {
        if (Date.now() > deadline) throw new Error("serve did not answer /readyz in time");
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(await ready()).toBe(false);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("without the project's Node, says which Node it needs and how to get it", async () => {
    // A copy of the command outside the checkout: no node_modules, nothing built.
    const copy = join(dir, "copy");
    mkdirSync(join(copy, "bin"), { recursive: true });
    for (const f of ["bin/gatehouse.js", "bin/supported-node.js", "package.json"]) {
      copyFileSync(join(root, f), join(copy, f));
    }
    const r = await run(node, [join(copy, "bin/gatehouse.js"), "bootstrap", "--org", "acme"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/needs Node\.js 22\.12 or newer; this is Node\.js v\d+/);
    expect(r.stderr).toContain("npm ci");
    expect(r.stderr).toContain("https://nodejs.org");
  });
});
