import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Sqlite from "better-sqlite3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "./helpers/child-server.js";

// SIGTERM under write load from HTTP/1.1 keep-alive clients: every request either gets its
// answer or is refused before it was sent (the listener is closed); none is reset on a
// connection the server closed under it, and every write answered 200 is on disk. Answers
// given during shutdown say `Connection: close`, so that no client sends on those connections
// again. (HTTP/2 clients get GOAWAY: test/e2e/tls-and-shutdown.test.ts.)

const dir = mkdtempSync(join(tmpdir(), "gatehouse-sigterm-"));
const dbPath = join(dir, "gatehouse.db");
let url: string;
let port: number;
let env: Record<string, string>;
let auth: Record<string, string>;
let orgUid: string;
let child: ChildServer | undefined;

beforeAll(async () => {
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  env = {
    GATEHOUSE_DB: dbPath,
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_LOG_LEVEL: "warn",
  };
  const boot = await runCli(["bootstrap", "--org", "sigterm"], env);
  expect(boot.code, boot.stderr).toBe(0);
  const out = JSON.parse(boot.stdout) as { orgUid: string; token: string };
  orgUid = out.orgUid;
  auth = { authorization: `Bearer ${out.token}`, "content-type": "application/json" };
});
afterAll(async () => {
  child?.process.kill("SIGKILL");
  await child?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** What one POST got: its status and whether it said Connection: close, or the error code. */
interface Outcome {
  status?: number;
  uid?: string;
  close?: boolean;
  /** The socket error (ECONNREFUSED, ECONNRESET, ...) when there was no answer. */
  error?: string;
  /** Whether the request went out on a kept-alive connection used before. */
  reused?: boolean;
}

function post(agent: http.Agent, name: string): Promise<Outcome> {
  const body = JSON.stringify({ name });
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: `/iam/v2beta1/groups/${orgUid}`,
        method: "POST",
        agent,
        headers: { ...auth, "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => {
          const json = JSON.parse(text || "{}") as { uid?: string };
          resolve({
            status: res.statusCode ?? 0,
            ...(json.uid ? { uid: json.uid } : {}),
            close: res.headers.connection === "close",
            reused: req.reusedSocket,
          });
        });
        res.on("error", (e: NodeJS.ErrnoException) =>
          resolve({ error: e.code ?? e.message, reused: req.reusedSocket }),
        );
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) =>
      resolve({ error: e.code ?? e.message, reused: req.reusedSocket }),
    );
    req.end(body);
  });
}

it("resets no keep-alive request and loses no write on SIGTERM", { timeout: 60_000 }, async () => {
  const outcomes: Outcome[] = [];
  for (let round = 0; round < 2; round++) {
    child = await startChildServer(url, env);
    const server = child;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    let n = 0;
    // 16 keep-alive clients, each writing back to back until the server is gone.
    const client = async () => {
      for (let i = 0; i < 100_000; i++) {
        const o = await post(agent, `r${round}-${n++}`);
        outcomes.push(o);
        if (o.error || o.status !== 200) return;
      }
    };
    const clients = Promise.all(Array.from({ length: 16 }, client));
    const before = outcomes.length;
    for (let waited = 0; outcomes.length - before < 100 && waited < 15_000; waited += 10) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(outcomes.length - before, "writes before SIGTERM").toBeGreaterThanOrEqual(100);
    server.process.kill("SIGTERM");
    await clients;
    expect(await server.exited).toBe(0);
    agent.destroy();
  }

  const errors = outcomes.filter((o) => o.error !== undefined);
  const answered = outcomes.filter((o) => o.status !== undefined);
  const byError: Record<string, number> = {};
  for (const o of errors) {
    const key = `${o.error}${o.reused ? " (reused socket)" : ""}`;
    byError[key] = (byError[key] ?? 0) + 1;
  }
  console.log(
    `SIGTERM x2 under 16 keep-alive writers: ${answered.length} answered ` +
      `(${answered.filter((o) => o.close).length} with Connection: close), errors: ` +
      JSON.stringify(byError),
  );
  // Every client ended on a refused connection (the listener was closed), never a reset.
  expect(errors.map((o) => o.error).filter((e) => e !== "ECONNREFUSED")).toEqual([]);
  expect(answered.filter((o) => o.status !== 200)).toEqual([]);
  // The answers given during shutdown told their clients the connection closes.
  expect(answered.filter((o) => o.close).length).toBeGreaterThan(0);
  // Every acknowledged write is on disk, and nothing was written that was not acknowledged.
  const db = new Sqlite(dbPath, { readonly: true });
  try {
    const rows = db.prepare("SELECT uid FROM group_parents WHERE parent_uid = ?").all(orgUid) as {
      uid: string;
    }[];
    const present = new Set(rows.map((r) => r.uid));
    const acked = answered.map((o) => o.uid!);
    expect(acked.filter((uid) => !present.has(uid))).toEqual([]);
    expect(present.size).toBe(acked.length);
  } finally {
    db.close();
  }
});
