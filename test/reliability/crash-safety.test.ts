import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Sqlite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import { runCli } from "../helpers/run-cli.js";
import { backends, freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "./helpers/child-server.js";
import {
  closureDiff,
  countDiff,
  integrityCheck,
  orphans,
  pgTreeDb,
  sqliteTreeDb,
  type TreeDb,
} from "./helpers/tree-checks.js";

// A real server process on a database (an SQLite file, or PostgreSQL), killed with SIGKILL in
// the middle of a stream of CreateGroup calls: what it acknowledged must survive, and the
// database must be sound.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-crash-"));
const dbPath = join(dir, "gatehouse.db");
let url: string;
let env: Record<string, string>;
let auth: Record<string, string>;
let orgUid: string;
let child: ChildServer | undefined;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Create groups under random acknowledged groups with `writers` calls in flight until the
 * server stops answering. `acked` fills with the uids the server acknowledged with 200 as
 * they come; `done` resolves with them once the server is gone.
 */
function writeUntilGone(
  known: string[],
  writers: number,
): { acked: string[]; done: Promise<string[]> } {
  const acked: string[] = [];
  // Names unique across rounds: a write the kill cut off may have committed all the same.
  const prefix = Math.random().toString(36).slice(2, 8);
  let n = 0;
  const writer = async () => {
    for (;;) {
      const parent = known[Math.floor(Math.random() * known.length)]!;
      const res = await fetch(`${url}/iam/v2beta1/groups/${parent}`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ name: `${prefix}-${n++}` }),
        signal: AbortSignal.timeout(5000),
      }).catch(() => undefined);
      if (!res) return; // the server is gone
      const body = (await res.json().catch(() => undefined)) as { uid?: string } | undefined;
      if (res.status !== 200 || !body?.uid) throw new Error(`CreateGroup: ${res.status}`);
      acked.push(body.uid);
      known.push(body.uid);
    }
  };
  const done = Promise.all(Array.from({ length: writers }, writer)).then(() => acked);
  // Handled here too, so that a refused write is reported where `done` is awaited, not as an
  // unhandled rejection while the caller waits for writes to flow.
  done.catch(() => undefined);
  return { acked, done };
}

describe.each(backends)("crash safety on %s", (backend) => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      ...(backend === "sqlite"
        ? { GATEHOUSE_DB: dbPath }
        : { GATEHOUSE_DATABASE_URL: await newPgDatabase({ migrated: false }) }),
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_BASE_URL: url,
      GATEHOUSE_LOG_LEVEL: "warn",
    };
    const boot = await runCli(["bootstrap", "--org", "crash"], env);
    expect(boot.code, boot.stderr).toBe(0);
    const out = JSON.parse(boot.stdout) as { orgUid: string; token: string };
    orgUid = out.orgUid;
    auth = { authorization: `Bearer ${out.token}`, "content-type": "application/json" };
  });
  afterAll(async () => {
    child?.process.kill("SIGKILL");
    await child?.exited;
  });

  /** The database as the next start finds it, before the server recovers it. */
  async function openAsFound(): Promise<TreeDb> {
    if (backend === "postgres") return pgTreeDb(env.GATEHOUSE_DATABASE_URL!);
    const db = new Sqlite(dbPath, { readonly: true });
    expect(integrityCheck(db)).toEqual(["ok"]);
    const tree = sqliteTreeDb(db);
    return {
      ...tree,
      close: async () => {
        db.close();
      },
    };
  }

  it("keeps every acknowledged write and a sound closure across SIGKILLs", {
    timeout: 60_000,
  }, async () => {
    const known = [orgUid];
    const acked: string[] = [];
    for (let round = 0; round < 2; round++) {
      child = await startChildServer(url, env);
      const server = child;
      const writing = writeUntilGone(known, 4);
      // Kill at a random moment once writes are flowing (however slowly a fresh process
      // answers its first ones), with calls in flight.
      for (let waited = 0; writing.acked.length < 10 && waited < 15_000; waited += 10) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(writing.acked.length, "writes acknowledged before the kill").toBeGreaterThanOrEqual(
        10,
      );
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      server.process.kill("SIGKILL");
      expect(await server.exited).toBe("SIGKILL");
      acked.push(...(await writing.done));

      const db = await openAsFound();
      try {
        const present = new Set(
          (await db.all<{ uid: string }>("SELECT uid FROM groups")).map((r) => r.uid),
        );
        expect(acked.filter((uid) => !present.has(uid))).toEqual([]);
        expect(await closureDiff(db)).toEqual({ missing: [], extra: [] });
        expect(await countDiff(db)).toEqual([]);
        expect(await orphans(db)).toEqual({});
      } finally {
        await db.close();
      }
    }

    // After a restart the server serves what it acknowledged.
    child = await startChildServer(url, env);
    const list = await fetch(`${url}/iam/v2beta1/groups?uidp.descendantsOf=${orgUid}&pageSize=1`, {
      headers: auth,
    });
    const json = (await list.json()) as { totalCount: string };
    expect(Number(json.totalCount)).toBeGreaterThanOrEqual(acked.length);
    const last = acked.at(-1)!;
    expect((await fetch(`${url}/iam/v2beta1/groups/${last}`, { headers: auth })).status).toBe(200);
    child.process.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  });
});
