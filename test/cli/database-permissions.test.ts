import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";

// The database holds the token signing keys: whoever reads it can mint an owner's token.

let dir: string;
let db: string;
let identity: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gatehouse-perms-"));
  db = join(dir, "state", "gatehouse.db");
  const run = await runCli(["bootstrap", "--org", "acme"], { GATEHOUSE_DB: db });
  expect(run.code).toBe(0);
  identity = JSON.parse(run.stdout).identityUid;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mode = (path: string) => statSync(path).mode & 0o777;

it("creates the database, its directory and its WAL files for the owner only", () => {
  expect(mode(db)).toBe(0o600);
  expect(mode(join(dir, "state"))).toBe(0o700);
  for (const f of [`${db}-wal`, `${db}-shm`]) if (existsSync(f)) expect(mode(f)).toBe(0o600);
});

it("refuses a database other users can read, naming the setting, unless told otherwise", async () => {
  chmodSync(db, 0o644);
  try {
    const token = await runCli(["token", "--identity", identity], { GATEHOUSE_DB: db });
    expect(token.code).toBe(2);
    expect(token.stdout).toBe("");
    expect(token.stderr).toMatch(/GATEHOUSE_DB \(--db\): .* is open to other users \(mode 0644\)/);
    expect(token.stderr).toMatch(/chmod 600/);

    // The server too: one line, exit 2, before it listens.
    const serve = await runCli(["serve", "--db", db, "--port", "0", "--host", "127.0.0.1"]);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toMatch(/is open to other users/);

    const allowed = await runCli(["token", "--identity", identity], {
      GATEHOUSE_DB: db,
      GATEHOUSE_ALLOW_READABLE_DB: "true",
    });
    expect(allowed.code).toBe(0);
  } finally {
    chmodSync(db, 0o600);
  }
});
