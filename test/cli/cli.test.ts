import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapIssuer } from "../../src/cli/bootstrap.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// The command line on the same database file as a running server: what it prints must work
// against that server.

const base = "https://gatehouse.test";
let dir: string;
let db: string;
let ts: TestServer;
let boot: { orgUid: string; identityUid: string; token: string; expiry: string };
const env = () => ({ GATEHOUSE_DB: db, GATEHOUSE_BASE_URL: base });

async function rest(method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${ts.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gatehouse-cli-"));
  db = join(dir, "gatehouse.db");
  const run = await runCli(["bootstrap", "--org", "acme"], env());
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  boot = JSON.parse(run.stdout);
  ts = await startTestServer({ GATEHOUSE_DB: db, GATEHOUSE_BASE_URL: base });
});
afterAll(async () => {
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("gatehouse bootstrap", () => {
  it("prints the organization, its owner identity and a token as JSON", () => {
    expect(boot.orgUid).toMatch(/^[0-9a-f]{40}$/);
    expect(boot.identityUid).toMatch(new RegExp(`^${boot.orgUid}/[0-9a-f]{16}$`));
    expect(typeof boot.token).toBe("string");
    expect(Date.parse(boot.expiry)).toBeGreaterThan(Date.now() + 3500_000);
  });

  it("gives a token that manages the organization over REST", async () => {
    const org = await rest("GET", `/iam/v2beta1/groups/${boot.orgUid}`, boot.token);
    expect(org).toMatchObject({ status: 200, json: { uid: boot.orgUid, name: "acme" } });
    const team = await rest("POST", `/iam/v2beta1/groups/${boot.orgUid}`, boot.token, {
      name: "team",
    });
    expect(team.status).toBe(200);
    expect(String(team.json.uid)).toMatch(new RegExp(`^${boot.orgUid}/`));
    expect((await rest("GET", `/iam/v2beta1/groups/${boot.orgUid}`)).status).toBe(401);
  });

  it("records what it made in the organization's audit trail, by the operator", async () => {
    const trail = await rest(
      "GET",
      `/events/v2beta1/events?uidp.descendantsOf=${boot.orgUid}`,
      boot.token,
    );
    const events = trail.json.events as { type: string; data: Record<string, unknown> }[];
    // The list is by time, then by uid (subject/id): bootstrap's three changes often share a
    // millisecond, and then their order is the uids', not the order they were made in.
    expect(
      events
        .slice(0, 3)
        .map((e) => e.type)
        .sort(),
    ).toEqual([
      "dev.gatehouse.iam.group.created.v1",
      "dev.gatehouse.iam.identity.created.v1",
      "dev.gatehouse.iam.role_binding.created.v1",
    ]);
    for (const e of events.slice(0, 3)) {
      expect(e.data).toMatchObject({ actor: { uid: "" }, operator: "gatehouse bootstrap" });
    }
  });

  it("makes an owner identity no OIDC token can match", async () => {
    const identity = await ts.store.getIdentity(boot.identityUid);
    expect(identity?.claimMatch?.issuer).toBe(bootstrapIssuer);
  });

  it("refuses a bad organization name", async () => {
    const run = await runCli(["bootstrap", "--org", "Not Valid!"], env());
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--org/);
    expect((await runCli(["bootstrap"], env())).stderr).toMatch(/--org is required/);
  });
});

describe("gatehouse token", () => {
  it("prints a fresh token for an existing identity", async () => {
    const run = await runCli(["token", "--identity", boot.identityUid], env());
    expect(run.code).toBe(0);
    const { token } = JSON.parse(run.stdout) as { token: string };
    expect(token).not.toBe(boot.token);
    expect((await rest("GET", `/iam/v2beta1/groups/${boot.orgUid}`, token)).status).toBe(200);
  });

  it("fails clearly for an unknown identity", async () => {
    const uid = `${boot.orgUid}/0000000000000000`;
    const run = await runCli(["token", "--identity", uid], env());
    expect(run).toMatchObject({ code: 1, stdout: "" });
    expect(run.stderr).toContain(`no identity ${uid}`);
    expect((await runCli(["token", "--identity", "nope"], env())).code).toBe(2);
    expect((await runCli(["token"], env())).stderr).toMatch(/--identity is required/);
  });

  it("refuses an audience other than the base URL and the registry audience", async () => {
    const run = await runCli(
      ["token", "--identity", boot.identityUid, "--aud", "https://evil.test"],
      env(),
    );
    expect(run.code).toBe(2);
  });
});

describe("gatehouse keys rotate", () => {
  it("adds a signing key that the running server accepts tokens from", async () => {
    const rotated = await runCli(["keys", "rotate"], env());
    expect(rotated.code).toBe(0);
    const { kid, keys } = JSON.parse(rotated.stdout) as { kid: string; keys: string[] };
    expect(keys).toContain(kid);
    expect(keys.length).toBeGreaterThan(1);
    const run = await runCli(["token", "--identity", boot.identityUid], env());
    const { token } = JSON.parse(run.stdout) as { token: string };
    expect(decodeProtectedHeader(token).kid).toBe(kid);
    expect((await rest("GET", `/iam/v2beta1/groups/${boot.orgUid}`, token)).status).toBe(200);
    // The boot token, signed by the older key, still verifies.
    expect((await rest("GET", `/iam/v2beta1/groups/${boot.orgUid}`, boot.token)).status).toBe(200);
  });
});

describe("a database the commands cannot use", () => {
  it.each<[string, string[], () => Record<string, string>, RegExp]>([
    [
      "a missing file (token)",
      ["token", "--identity", "a".repeat(40)],
      () => ({ GATEHOUSE_DB: join(dir, "missing.db") }),
      /no database at/,
    ],
    [
      "a missing file (keys rotate)",
      ["keys", "rotate"],
      () => ({ GATEHOUSE_DB: join(dir, "missing.db") }),
      /no database at/,
    ],
    ["a directory", ["bootstrap", "--org", "x"], () => ({ GATEHOUSE_DB: dir }), /not a file/],
    [
      "an in-memory database",
      ["bootstrap", "--org", "x"],
      () => ({ GATEHOUSE_DB: ":memory:" }),
      /must be a file/,
    ],
    [
      "a file that is not SQLite",
      ["keys", "rotate"],
      () => {
        const p = join(dir, "junk.db");
        writeFileSync(p, "this is not a database, just text that is long enough to look like one");
        return { GATEHOUSE_DB: p };
      },
      /cannot open database/,
    ],
    ["a bad flag", ["token", "--nope"], () => env(), /Unknown option/],
  ])("exits 2 with a message for %s", async (_name, argv, makeEnv, message) => {
    const run = await runCli(argv, makeEnv());
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message);
  });

  it("takes --db as a flag like serve", async () => {
    const run = await runCli(["keys", "rotate", "--db", join(dir, "missing.db")]);
    expect(run).toMatchObject({ code: 2 });
    expect(run.stderr).toContain("missing.db");
  });
});

describe("gatehouse --help", () => {
  it("names every command and each command's options", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    for (const c of ["serve", "bootstrap", "token", "keys rotate"]) expect(top.stdout).toContain(c);
    expect((await runCli(["bootstrap", "--help"])).stdout).toMatch(/--org/);
    expect((await runCli(["token", "--help"])).stdout).toMatch(/--identity[\s\S]*--aud/);
    expect((await runCli(["keys", "--help"])).stdout).toMatch(/keys rotate[\s\S]*--db/);
    const unknown = await runCli(["frobnicate"]);
    expect(unknown.code).toBe(2);
  });
});

describe("help and version", () => {
  it("prints the version", async () => {
    const run = await runCli(["--version"]);
    expect(run.code).toBe(0);
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    expect(run.stdout).toBe(`gatehouse ${version}\n`);
  });

  it.each(["serve", "bootstrap", "token", "keys", "import"])(
    "help %s shows that command's help, as %s --help does",
    async (command) => {
      const viaHelp = await runCli(["help", command]);
      const viaFlag = await runCli([command, "--help"]);
      expect(viaHelp.code).toBe(0);
      expect(viaHelp.stdout).toBe(viaFlag.stdout);
      expect(viaHelp.stdout).toMatch(new RegExp(`^Usage: gatehouse ${command}`));
    },
  );

  it("refuses help for an unknown command with exit 2", async () => {
    const run = await runCli(["help", "frobnicate"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/unknown command "frobnicate"/);
  });
});
