import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "../reliability/helpers/child-server.js";

// bootstrap and token, run on the server's database without its port or base URL, used to
// mint tokens for http://localhost:8080 that the server then refused. serve records the URLs
// it serves under; the commands use them, and warn when told otherwise.

let dir: string;
let db: string;
let url: string;
let child: ChildServer;
let identity: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gatehouse-urls-"));
  db = join(dir, "gatehouse.db");
  const boot = await runCli(["bootstrap", "--org", "acme"], { GATEHOUSE_DB: db });
  expect(boot.code).toBe(0);
  identity = JSON.parse(boot.stdout).identityUid;
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  child = await startChildServer(url, {
    GATEHOUSE_DB: db,
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_LOG_LEVEL: "silent",
  });
});
afterAll(async () => {
  child?.process.kill("SIGTERM");
  await child?.exited;
  rmSync(dir, { recursive: true, force: true });
});

const readOrgs = (token: string) =>
  fetch(`${url}/iam/v2beta1/groups`, { headers: { authorization: `Bearer ${token}` } });

it("token, run without the server's settings, mints for the URLs the server serves under", async () => {
  const run = await runCli(["token", "--identity", identity], { GATEHOUSE_DB: db });
  expect(run.code).toBe(0);
  expect(run.stderr).toBe("");
  expect((await readOrgs(JSON.parse(run.stdout).token)).status).toBe(200);
});

it("bootstrap does too", async () => {
  const run = await runCli(["bootstrap", "--org", "second"], { GATEHOUSE_DB: db });
  expect(run.code).toBe(0);
  expect((await readOrgs(JSON.parse(run.stdout).token)).status).toBe(200);
});

it("warns when told a base URL other than the server's", async () => {
  const run = await runCli(["token", "--identity", identity], {
    GATEHOUSE_DB: db,
    GATEHOUSE_BASE_URL: "http://localhost:8080",
  });
  expect(run.code).toBe(0);
  expect(run.stderr).toContain(`the server on this database serves with GATEHOUSE_BASE_URL=${url}`);
  expect((await readOrgs(JSON.parse(run.stdout).token)).status).toBe(401);
});
