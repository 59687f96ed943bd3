/**
 * `npm run bench -- --only=postgres` (and every full run): Gatehouse on PostgreSQL.
 *
 * - REST and gRPC GetGroup on one replica, against the SQLite server measured earlier in the
 *   same run (the same dataset shape, seeded through the Store API: bench/pg-seed.ts).
 * - REST GetGroup throughput on one, two and three `gatehouse serve` replicas sharing one
 *   PostgreSQL, the load spread evenly over them, with the CPU each part used.
 * - Revocation propagation: a binding deleted through replica A, the time until replica B
 *   refuses the call it allowed.
 * - ListGroups over the 111,110-group subtree, in process through the Store API and over REST.
 * - CreateGroup over REST, one at a time and 50 in flight.
 *
 * The machine has two cores. The load generator (this process) stays on core 1, as in the
 * SQLite figures; where PostgreSQL and the replicas run is said with each figure.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import autocannon from "autocannon";
import pg from "pg";
import { builtinRoles, storeRoles } from "../src/auth/capabilities.js";
import { createKeyRing } from "../src/auth/keyring.js";
import { createTokenIssuer } from "../src/auth/tokens.js";
import { serverNodeFlags } from "../src/node-flags.js";
import { createPostgresStore } from "../src/store/postgres/pg-store.js";
import type { ListQuery } from "../src/store/store.js";
import { newChildUid } from "../src/uid.js";
import { ensurePgSeeded } from "./pg-seed.js";
import type { BenchPostgres } from "./postgres-server.js";
import { accepts, freePort, processCpuMs, stop } from "./processes.js";

/** What run.ts lends this section: its measurement helpers and the SQLite figures. */
export interface PgBenchKit {
  seconds: number;
  /** The seeded tree's depth: 5 (111,111 groups, the SQLite dataset's) unless trying out. */
  depth: number;
  hasTaskset: boolean;
  row(figure: string, value: string, goal: string, met: string): void;
  /** autocannon, 50 connections unless told, after a 1 s warm-up: requests per second. */
  throughput(load: { url: string; headers?: Record<string, string> }): Promise<number>;
  /** grpc-js GetGroup calls per second, one channel, 50 in flight. */
  grpcThroughput(port: number, headers: Record<string, string>, uid: string): Promise<number>;
  /** The SQLite server's figures from this run, on core 0 alone. */
  sqlite: { rest: number; grpc: number };
}

interface Replica {
  proc: ChildProcess;
  port: number;
  url: string;
}

const viewer = builtinRoles.find((r) => r.name === "viewer")!;

export async function postgresBench(kit: PgBenchKit): Promise<void> {
  const t0 = performance.now();
  const seeded = await ensurePgSeeded(kit.depth);
  const m = seeded.manifest;
  const server = seeded.server;
  try {
    console.log(
      seeded.cached
        ? `postgres dataset: cached (seeded in ${(m.seedMs / 1000).toFixed(1)} s)`
        : `postgres dataset: seeded in ${(m.seedMs / 1000).toFixed(1)} s`,
    );
    // Each run works on a copy: CreateGroup and the revocations write.
    const url = await server.createDatabase("run", "seed");
    console.log(`postgres: copy of the seed ready after ${sec(performance.now() - t0)}`);
    await measure(kit, server, url, m);
  } finally {
    await server.stop();
  }
  console.log(`postgres section: ${sec(performance.now() - t0)}`);
}

async function measure(
  kit: PgBenchKit,
  server: BenchPostgres,
  url: string,
  m: Awaited<ReturnType<typeof ensurePgSeeded>>["manifest"],
): Promise<void> {
  const { row, seconds } = kit;
  const ports = await Promise.all([0, 1, 2].map(() => freePort()));
  const baseUrl = `http://127.0.0.1:${ports[0]}`;

  // In process: the signing key (before any replica starts), the tokens, and the lists later.
  const store = await createPostgresStore(url, { roles: storeRoles, listen: false });
  const keyRing = createKeyRing({ store });
  await keyRing.ensureKey();
  const tokens = createTokenIssuer({ keyRing, issuer: baseUrl });
  const auth = { authorization: `Bearer ${(await tokens.issue(m.admin, baseUrl)).token}` };
  // The revocation probe: a workload identity of the organization, with no binding of its own.
  const probe = await store.createIdentity({
    uid: newChildUid(m.deepParent),
    groupUid: m.deepParent,
    name: "revocation probe",
    description: "",
    claimMatch: {
      issuer: "https://ci.bench",
      issuerPattern: "",
      subject: "revocation-probe",
      subjectPattern: "",
      audience: "",
      audiencePattern: "",
      claims: {},
      claimPatterns: {},
    },
    now: Date.now(),
  });
  const probeAuth = {
    authorization: `Bearer ${(await tokens.issue(probe.uid, baseUrl)).token}`,
  };

  const replicas: Replica[] = [];
  const startReplica = async (cores: string) => {
    const i = replicas.length;
    const port = ports[i]!;
    const proc = await startGatehouse(kit.hasTaskset ? cores : undefined, port, {
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_PORT: String(port),
      // One public address for every replica: the tokens' issuer and audience.
      GATEHOUSE_BASE_URL: baseUrl,
      GATEHOUSE_DATABASE_URL: url,
      GATEHOUSE_LOG_LEVEL: "warn",
    });
    const r = { proc, port, url: `http://127.0.0.1:${port}` };
    replicas.push(r);
    return r;
  };
  const pgCores = (cores: string) => {
    if (!kit.hasTaskset) return;
    for (const pid of server.pids()) {
      try {
        execFileSync("taskset", ["-a", "-pc", cores, String(pid)], { stdio: "ignore" });
      } catch {
        // A backend that ended meanwhile.
      }
    }
  };
  const getPath = `/iam/v2beta1/groups/${m.leaf}`;

  try {
    // --- one replica, against SQLite ------------------------------------------------------
    // The replica on core 0, where the SQLite server ran alone; PostgreSQL free to use both.
    const a = await startReplica("0");
    pgCores("0,1");
    const cpu = cpuMeter(server, replicas);
    const rest = await kit.throughput({ url: a.url + getPath, headers: auth });
    const restCpu = cpu.read();
    row(
      "PostgreSQL: authorized REST GetGroup, one replica (replica core 0, PostgreSQL cores 0-1)",
      `${rps(rest)}; CPU ${restCpu}`,
      ">= 60% of SQLite's in this run",
      `${pct(rest / kit.sqlite.rest)} of ${rps(kit.sqlite.rest)} ${yes(rest / kit.sqlite.rest >= 0.6)}`,
    );
    const grpcRps = await kit.grpcThroughput(a.port, auth, m.leaf);
    row(
      "PostgreSQL: authorized gRPC GetGroup (grpc-js), one port, one replica",
      rps(grpcRps),
      "reported",
      `${pct(grpcRps / kit.sqlite.grpc)} of SQLite's ${rps(kit.sqlite.grpc)}`,
    );
    // The whole server side on the one core the SQLite server had to itself.
    pgCores("0");
    const oneCore = await kit.throughput({ url: a.url + getPath, headers: auth });
    row(
      "PostgreSQL: authorized REST GetGroup, one replica and PostgreSQL both on core 0",
      rps(oneCore),
      "reported",
      `${pct(oneCore / kit.sqlite.rest)} of SQLite's`,
    );

    // --- one, two, three replicas -----------------------------------------------------------
    // Everything but the load generator floats over both cores: there is no core to give each.
    pgCores("0,1");
    if (kit.hasTaskset) execFileSync("taskset", ["-a", "-pc", "0,1", String(a.proc.pid)]);
    let one = 0;
    for (const n of [1, 2, 3]) {
      while (replicas.length < n) await startReplica("0,1");
      const meter = cpuMeter(server, replicas);
      const total = await spread(
        replicas.map((r) => r.url + getPath),
        auth,
        seconds,
      );
      if (n === 1) one = total;
      row(
        `PostgreSQL: REST GetGroup over ${n} replica${n > 1 ? "s" : ""} (replicas and PostgreSQL on both cores, load generator on core 1)`,
        `${rps(total)}; CPU ${meter.read()}`,
        "reported (2 cores)",
        n === 1 ? "-" : `${(total / one).toFixed(2)}x one replica`,
      );
    }

    // --- revocation propagation -------------------------------------------------------------
    const prop = await revocations(replicas[0]!, replicas[1]!, auth, probeAuth, probe.uid, m);
    row(
      `PostgreSQL: revocation through replica A until replica B refuses (${prop.revoke.length} samples)`,
      `p50 ${ms(q(prop.revoke, 0.5))}, p99 ${ms(q(prop.revoke, 0.99))}, max ${ms(q(prop.revoke, 1))}`,
      "p99 < 100 ms",
      yes(q(prop.revoke, 0.99) < 100),
    );
    row(
      "PostgreSQL: grant through replica A until replica B allows",
      `p50 ${ms(q(prop.grant, 0.5))}, p99 ${ms(q(prop.grant, 0.99))}, max ${ms(q(prop.grant, 1))}`,
      "reported",
      "-",
    );
    while (replicas.length > 1) await stop(replicas.pop()!.proc);

    // --- ListGroups over the 111,110-group subtree ------------------------------------------
    const list = (order: "name" | "uid", after?: { value: string; uid: string }) => {
      const query: ListQuery = {
        descendantsOf: m.root,
        filters: {},
        order: { field: order, desc: false },
        skip: 0,
        limit: 50,
        ...(after ? { after } : {}),
      };
      return store.listGroups(query);
    };
    const firstPage = await list("uid");
    if (firstPage.items.length !== 50 || firstPage.total !== m.groups - 1) {
      throw new Error(`ListGroups: ${firstPage.items.length} groups of ${firstPage.total}`);
    }
    // A cursor past 60,000 of the subtree's names (g1-*, g2-*, ..., g5-000000 to g5-099999).
    const deep = { value: "g5-050000", uid: "" };
    const [first, byName, deepPage] = await timeInTurns(
      [() => list("uid"), () => list("name"), () => list("name", deep)],
      300,
    );
    row(
      `PostgreSQL in process: ListGroups ${m.groups - 1} descendants, first 50 + totalCount`,
      pq(first!),
      "reported (SQLite in process: p99 0.24 ms at 100k, bench/scale.ts)",
      "-",
    );
    row(
      "PostgreSQL in process: ListGroups by name, first page / page ~60,000 deep",
      `${pq(byName!)} / ${pq(deepPage!)}`,
      "reported; deep p50 <= first page's (+10%)",
      yes(q(deepPage!, 0.5) <= q(byName!, 0.5) * 1.1),
    );
    const listUrl = `${replicas[0]!.url}/iam/v2beta1/groups?${new URLSearchParams({ "uidp.descendantsOf": m.root, pageSize: "50" })}`;
    const [restList] = await timeInTurns([() => get(listUrl, auth)], 300);
    row(
      `PostgreSQL over REST: ListGroups ${m.groups - 1} descendants, first 50 + totalCount`,
      pq(restList!),
      "<= 5 ms p99 (the SQLite goal)",
      yes(q(restList!, 0.99) <= 5),
    );

    // --- CreateGroup ------------------------------------------------------------------------
    const c = await creates(replicas[0]!.url, m.deepParent, auth, seconds, () => rollbacks(url));
    row(
      `PostgreSQL: CreateGroup under a depth-4 parent, one at a time (${c.sequential.length} made)`,
      `${pq(c.sequential)}; ${rps(c.sequentialRate)}`,
      "reported",
      "-",
    );
    row(
      "PostgreSQL: CreateGroup, 50 in flight under one parent",
      `${rps(c.concurrentRate)}, ${pq(c.concurrent)}; ${c.failed} failed${c.failure ? ` (${c.failure})` : ""}; ${c.rolledBack} transactions rolled back (serialization retries)`,
      "reported",
      `${(c.concurrentRate / c.sequentialRate).toFixed(1)}x one at a time`,
    );
  } finally {
    for (const r of replicas) await stop(r.proc);
    await store.close();
  }
}

/** REST GetGroup spread over `urls`, 50 connections in all: total requests per second. */
async function spread(
  urls: string[],
  headers: Record<string, string>,
  seconds: number,
): Promise<number> {
  const share = (i: number) => Math.floor(50 / urls.length) + (i < 50 % urls.length ? 1 : 0);
  const run = (duration: number) =>
    Promise.all(
      urls.map((url, i) =>
        autocannon({ url, headers, connections: share(i), duration }).then((r) => {
          if (r.non2xx > 0 || r.errors > 0) {
            throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
          }
          return r.requests.average;
        }),
      ),
    );
  await run(1);
  return (await run(seconds)).reduce((a, b) => a + b, 0);
}

/**
 * Grant then revoke a viewer binding through replica A, each time timing how long replica B
 * takes to agree: B is polled (GetGroup as the bound identity) every millisecond. Timed from A's
 * answer, so each figure includes one poll's round trip on B.
 */
async function revocations(
  a: Replica,
  b: Replica,
  adminAuth: Record<string, string>,
  probeAuth: Record<string, string>,
  probeUid: string,
  m: { leaf: string },
): Promise<{ grant: number[]; revoke: number[] }> {
  const grant: number[] = [];
  const revoke: number[] = [];
  const probe = `${b.url}/iam/v2beta1/groups/${m.leaf}`;
  const allowed = async () => {
    const res = await fetch(probe, { headers: probeAuth });
    await res.arrayBuffer();
    if (res.status === 200) return true;
    if (res.status === 403 || res.status === 404) return false;
    throw new Error(`GetGroup on replica B: ${res.status}`);
  };
  const until = async (want: boolean) => {
    const t = performance.now();
    while ((await allowed()) !== want) {
      if (performance.now() - t > 10_000) throw new Error(`replica B: still ${!want} after 10 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
    return performance.now() - t;
  };
  if (await allowed()) throw new Error("the probe identity can read the leaf before any grant");
  for (let i = 0; i < 110; i++) {
    const res = await fetch(`${a.url}/iam/v2beta1/roleBindings/${m.leaf}`, {
      method: "POST",
      headers: { ...adminAuth, "content-type": "application/json" },
      body: JSON.stringify({ identityUid: probeUid, roleUid: viewer.uid }),
    });
    if (res.status !== 200) throw new Error(`CreateRoleBinding: ${res.status} ${await res.text()}`);
    const binding = (await res.json()) as { uid: string };
    const granted = await until(true);
    // B has now cached the allowed answer; some idle time, as a real revocation would find it.
    await new Promise((r) => setTimeout(r, 20));
    const del = await fetch(`${a.url}/iam/v2beta1/roleBindings/${binding.uid}`, {
      method: "DELETE",
      headers: adminAuth,
    });
    if (del.status !== 200) throw new Error(`DeleteRoleBinding: ${del.status} ${await del.text()}`);
    await del.arrayBuffer();
    const revoked = await until(false);
    // The first ten warm the path.
    if (i >= 10) {
      grant.push(granted);
      revoke.push(revoked);
    }
  }
  return { grant, revoke };
}

/** CreateGroup over REST: one at a time, then 50 in flight, each for `seconds`. */
async function creates(
  url: string,
  parent: string,
  auth: Record<string, string>,
  seconds: number,
  rolledBack: () => Promise<number>,
) {
  let n = 0;
  let failed = 0;
  let failure: string | undefined;
  const createOnce = async (): Promise<boolean> => {
    const res = await fetch(`${url}/iam/v2beta1/groups/${parent}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: `pg-bench-${Date.now()}-${n++}` }),
    });
    const text = await res.text();
    if (res.status === 200) return true;
    failed++;
    failure ??= `${res.status} ${text.slice(0, 120)}`;
    return false;
  };
  const timed = async (inFlight: number, duration: number) => {
    const times: number[] = [];
    const until = performance.now() + duration;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (performance.now() < until) {
          const s = performance.now();
          if (await createOnce()) times.push(performance.now() - s);
        }
      }),
    );
    return { times, rate: times.length / ((performance.now() - t) / 1000) };
  };
  await timed(1, 1000);
  const seq = await timed(1, seconds * 1000);
  const seqFailed = failed;
  const before = await rolledBack();
  const conc = await timed(50, seconds * 1000);
  const after = await rolledBack();
  if (seqFailed > 0) throw new Error(`CreateGroup one at a time: ${failure}`);
  return {
    sequential: seq.times,
    sequentialRate: seq.rate,
    concurrent: conc.times,
    concurrentRate: conc.rate,
    failed,
    failure,
    rolledBack: after - before,
  };
}

/** The database's rolled-back transactions so far (its statistics, flushed first). */
async function rollbacks(url: string): Promise<number> {
  // Backends report their counts at most once a second.
  await new Promise((r) => setTimeout(r, 1_500));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ n: string }>(
      "SELECT xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
    );
    return Number(r.rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** Each of `fns` called `n` times, in turn, one call at a time (after 20 warm-up rounds). */
async function timeInTurns(fns: (() => Promise<unknown>)[], n: number): Promise<number[][]> {
  for (let i = 0; i < 20; i++) for (const fn of fns) await fn();
  const out: number[][] = fns.map(() => []);
  for (let i = 0; i < n; i++) {
    for (const [j, fn] of fns.entries()) {
      const t = performance.now();
      await fn();
      out[j]!.push(performance.now() - t);
    }
  }
  return out;
}

async function get(url: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(url, { headers });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  await res.arrayBuffer();
}

/**
 * CPU time used by the replicas, PostgreSQL (postmaster and backends) and this process (the
 * load generator) from now until `read`, as percentages of one core.
 */
function cpuMeter(server: BenchPostgres, replicas: Replica[]) {
  const pgMs = () => server.pids().reduce((s, p) => s + processCpuMs(p), 0);
  const replicaMs = () => replicas.reduce((s, r) => s + processCpuMs(r.proc.pid!), 0);
  const start = { pg: pgMs(), replicas: replicaMs(), self: process.cpuUsage(), t: now() };
  return {
    read() {
      const wall = now() - start.t;
      const self = process.cpuUsage(start.self);
      const share = (cpuMs: number) => `${Math.round((100 * cpuMs) / wall)}%`;
      return `replicas ${share(replicaMs() - start.replicas)}, PostgreSQL ${share(pgMs() - start.pg)}, load generator ${share((self.user + self.system) / 1000)} (of 200%)`;
    },
  };
}
const now = () => performance.now();

async function startGatehouse(
  cores: string | undefined,
  port: number,
  env: Record<string, string>,
): Promise<ChildProcess> {
  const cmd = [process.execPath, ...serverNodeFlags, "bin/gatehouse.js", "serve"];
  const opts = { stdio: "inherit" as const, env: { ...process.env, ...env } };
  const proc =
    cores === undefined
      ? spawn(cmd[0]!, cmd.slice(1), opts)
      : spawn("taskset", ["-c", cores, ...cmd], opts);
  const deadline = Date.now() + 30_000;
  while (!(await accepts(port))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      throw new Error(`gatehouse serve on port ${port} did not start`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return proc;
}

/** The `p` quantile of `xs` (1: the maximum). */
function q(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
}
function pq(xs: number[]): string {
  return `p50 ${ms(q(xs, 0.5))}, p99 ${ms(q(xs, 0.99))}`;
}
const ms = (n: number) => `${n.toFixed(2)} ms`;
const sec = (n: number) => `${(n / 1000).toFixed(1)} s`;
const rps = (n: number) => `${Math.round(n).toLocaleString("en-US")} req/s`;
const pct = (r: number) => `${Math.round(r * 100)}%`;
const yes = (ok: boolean) => (ok ? "met" : "MISSED");
