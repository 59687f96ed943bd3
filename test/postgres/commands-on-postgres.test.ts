import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import { runCli } from "../helpers/run-cli.js";
import { freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "../reliability/helpers/child-server.js";

// Every operator command works on PostgreSQL through GATEHOUSE_DATABASE_URL, as on the SQLite
// file: serve records its URLs, bootstrap makes an organization whose token that server
// accepts, token mints for an identity, keys rotate adds a key the server then publishes,
// import writes advisories the server lists.

const sample = fileURLToPath(new URL("../fixtures/osv/go-vulndb-sample.jsonl.gz", import.meta.url));
let env: Record<string, string>;
let url: string;
let child: ChildServer | undefined;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  env = {
    // An empty database: the first command to open it creates the schema.
    GATEHOUSE_DATABASE_URL: await newPgDatabase({ migrated: false }),
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_LOG_LEVEL: "warn",
  };
});
afterAll(async () => {
  child?.process.kill("SIGKILL");
  await child?.exited;
});

const json = (s: string) => JSON.parse(s) as Record<string, string>;

describe("the operator commands on PostgreSQL", () => {
  it("serve, bootstrap, token, keys rotate and import share one database", async () => {
    child = await startChildServer(url, env);
    const boot = await runCli(["bootstrap", "--org", "pg-acme"], env);
    expect(boot.code, boot.stderr).toBe(0);
    const { orgUid, identityUid, token } = json(boot.stdout);
    const auth = { authorization: `Bearer ${token}` };
    const org = await fetch(`${url}/iam/v2beta1/groups/${orgUid}`, { headers: auth });
    expect(org.status).toBe(200);
    expect(((await org.json()) as { name: string }).name).toBe("pg-acme");

    const minted = await runCli(["token", "--identity", identityUid!], env);
    expect(minted.code, minted.stderr).toBe(0);
    const again = await fetch(`${url}/iam/v2beta1/groups/${orgUid}`, {
      headers: { authorization: `Bearer ${json(minted.stdout).token}` },
    });
    expect(again.status).toBe(200);

    const rotated = await runCli(["keys", "rotate"], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const { kid } = json(rotated.stdout);
    expect(kid).toBeTruthy();

    const imported = await runCli(["import", "advisories", "--group", orgUid!, sample], env);
    expect(imported.code, imported.stderr).toBe(0);
    const list = await fetch(
      `${url}/vulnerabilities/v2beta1/advisories?uidp.descendantsOf=${orgUid}&pageSize=1`,
      { headers: auth },
    );
    expect(list.status).toBe(200);
    const page = (await list.json()) as { totalCount: string };
    expect(Number(page.totalCount)).toBeGreaterThan(0);

    // A server started now reads the rotated key ring from the database and publishes it.
    child.process.kill("SIGTERM");
    expect(await child.exited).toBe(0);
    child = await startChildServer(url, env);
    const jwks = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as {
      keys: { kid: string }[];
    };
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
  });

  it("refuses a URL that is not PostgreSQL, and one it cannot reach, naming the setting, never the password", async () => {
    const bad = await runCli(["token", "--identity", "x"], {
      ...env,
      GATEHOUSE_DATABASE_URL: "mysql://root:hunter2@127.0.0.1/db",
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("GATEHOUSE_DATABASE_URL");
    expect(bad.stderr).not.toContain("hunter2");
    const port = await freePort();
    const away = await runCli(["keys", "rotate"], {
      ...env,
      GATEHOUSE_DATABASE_URL: `postgres://gatehouse:hunter2@127.0.0.1:${port}/gatehouse`,
    });
    expect(away.code).toBe(2);
    expect(away.stderr).toContain("GATEHOUSE_DATABASE_URL");
    expect(away.stderr).not.toContain("hunter2");
  });
});
