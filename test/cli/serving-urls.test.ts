import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "../reliability/helpers/child-server.js";

// bootstrap and token, run on the server's database without its port or base URL, used to
// mint tokens for http://localhost:8080 that the server then refused. serve records the URLs
// it serves under; the commands use them, saying so, and settings given now win, with a
// warning. A new GATEHOUSE_PORT was ignored in favour of the recorded URL, silently: the token
// was then refused with 401 "from another issuer".

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
  expect(run.stderr).toBe(
    `gatehouse token: note: minting for GATEHOUSE_BASE_URL=${url}, which the server that last ` +
      "ran on this database serves under; set GATEHOUSE_BASE_URL (or GATEHOUSE_PORT) for another\n",
  );
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
  expect(run.stderr).toContain(
    "minting for GATEHOUSE_BASE_URL=http://localhost:8080, as given; the server that last ran " +
      `on this database serves with GATEHOUSE_BASE_URL=${url} and will refuse this token`,
  );
  expect((await readOrgs(JSON.parse(run.stdout).token)).status).toBe(401);
});

it("bootstrap with a new GATEHOUSE_PORT mints for that port, which its server accepts", async () => {
  const port = await freePort();
  const run = await runCli(["bootstrap", "--org", "third"], {
    GATEHOUSE_DB: db,
    GATEHOUSE_PORT: String(port),
  });
  expect(run.code).toBe(0);
  expect(run.stderr).toContain(`minting for GATEHOUSE_BASE_URL=http://localhost:${port}, as given`);
  // One line: the auth URL follows the base URL, as the recorded one did.
  expect(run.stderr.trim().split("\n")).toHaveLength(1);
  // The new server on that port, started after bootstrap as the README does.
  const other = `http://127.0.0.1:${port}`;
  const second = await startChildServer(other, {
    GATEHOUSE_DB: db,
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_LOG_LEVEL: "silent",
  });
  try {
    const res = await fetch(`${other}/iam/v2beta1/groups`, {
      headers: { authorization: `Bearer ${JSON.parse(run.stdout).token}` },
    });
    expect(res.status).toBe(200);
  } finally {
    second.process.kill("SIGTERM");
    await second.exited;
  }
});
