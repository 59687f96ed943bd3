/**
 * `npm run bench`: seed (or reuse) the dataset, then measure in one run, with each server in a
 * child process pinned to core 0 (taskset, where present) and the load generated here, on
 * core 1. Prints the figures and writes bench/RESULTS.md. `--profile` runs the Gatehouse child
 * under `node --cpu-prof` (profiles land in data/bench/profiles/); `--quick` shortens each
 * measurement to 2 s.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { cpus, loadavg } from "node:os";
import { toBinary } from "@bufbuild/protobuf";
import autocannon from "autocannon";
import Database from "better-sqlite3";
import { GroupSchema } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { storeRoles } from "../src/auth/capabilities.js";
import { createKeyRing } from "../src/auth/keyring.js";
import { createTokenIssuer } from "../src/auth/tokens.js";
import { serverEnvironment, serverNodeFlags } from "../src/node-flags.js";
import { toGroup } from "../src/services/iam/groups.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid } from "../src/uid.js";
import { startOidcIssuer } from "../test/helpers/oidc-issuer.js";
import { grpcCaller } from "./groups-proto.js";
import { h2GrpcSender } from "./h2-grpc-sender.js";
import { httpSender } from "./http-sender.js";
import { type OpenLoopResult, openLoop } from "./open-loop.js";
import { postgresBench } from "./postgres.js";
import { accepts, freePort, processCpuMs, stop } from "./processes.js";
import { ensureSeeded } from "./seed.js";
import { schedstat } from "./stall-probe.js";

// The open-loop senders' connections: kept alive, enough of them that none waits for a socket.
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 256 });
const args = new Set(process.argv.slice(2));
const only = process.argv
  .find((a) => a.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
const want = (section: string) => !only || only.includes(section);
const profile = args.has("--profile");
// The Gatehouse server runs with the flags it ships with (src/node-flags.ts), or with
// --server-flags="--flag ..." instead (A/B runs; --server-flags= for none).
const givenFlags = process.argv
  .find((a) => a.startsWith("--server-flags="))
  ?.slice("--server-flags=".length);
const serverFlags =
  givenFlags === undefined ? [...serverNodeFlags] : givenFlags.split(" ").filter(Boolean);
const seconds = args.has("--quick") ? 2 : 6;
const hasTaskset = commandExists("taskset");
// The load generator stays off the server's core.
if (hasTaskset && cpus().length > 1) execFileSync("taskset", ["-pc", "1", String(process.pid)]);

const startLoad = loadavg()
  .map((l) => l.toFixed(2))
  .join(" ");
console.log(`load average ${startLoad}`);
const seeded = await ensureSeeded();
const m = seeded.manifest;
console.log(
  seeded.cached
    ? `dataset: cached (seeded in ${(m.seedMs / 1000).toFixed(1)} s)`
    : `dataset: seeded in ${(m.seedMs / 1000).toFixed(1)} s`,
);

// Each run works on a copy: CreateGroup adds groups, and the cache stays as seeded.
const dbPath = "data/bench/run.db";
for (const f of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) rmSync(f, { force: true });
copyFileSync("data/bench/seed-v1.db", dbPath);
// The copy holds the signing keys: owner-only, as the server insists.
chmodSync(dbPath, 0o600);

const issuer = await startOidcIssuer();
const port = await freePort();
const baseUrl = `http://127.0.0.1:${port}`;

// Before the server opens the copy: an identity the issuer's tokens match, and the admin's token.
const store = createSqliteStore(dbPath, { roles: storeRoles });
const workload = await store.createIdentity({
  uid: newChildUid(m.deepParent),
  groupUid: m.deepParent,
  name: "bench workload",
  description: "",
  claimMatch: {
    issuer: issuer.url,
    issuerPattern: "",
    subject: "workload",
    subjectPattern: "",
    audience: "gatehouse",
    audiencePattern: "",
    claims: {},
    claimPatterns: {},
  },
  now: Date.now(),
});
// A repo the registry token endpoint grants on: `<organization name>/bench-app`.
const registryService = "127.0.0.1:5000";
const org = await store.getGroup(m.root);
if (!org) throw new Error(`the seeded organization ${m.root} is missing`);
await store.createRepo({
  uid: newChildUid(m.root),
  groupUid: m.root,
  name: "bench-app",
  description: "",
  aliases: [],
  now: Date.now(),
});
const registryName = `${org.name}/bench-app`;
const keyRing = createKeyRing({ store });
await keyRing.ensureKey();
const adminToken = (await createTokenIssuer({ keyRing, issuer: baseUrl }).issue(m.admin, baseUrl))
  .token;
// The leaf group as GetGroup answers it: the bare grpc-js reference answers the same bytes.
const leafRecord = await store.getGroup(m.leaf);
if (!leafRecord) throw new Error(`the seeded leaf ${m.leaf} is missing`);
const leafBytes = Buffer.from(toBinary(GroupSchema, toGroup(leafRecord))).toString("base64");
await store.close();
const auth = { authorization: `Bearer ${adminToken}` };

interface Row {
  figure: string;
  value: string;
  goal: string;
  /** The ratio or the comparison with the goal. */
  met: string;
  /** The server's CPU time per call while measured, with the reference's in the same run. */
  cpu: string;
}
const rows: Row[] = [];
const row = (figure: string, value: string, goal: string, met: string, cpu = "") => {
  rows.push({ figure, value, goal, met, cpu });
  console.log(`  ${figure}: ${value} (${goal}; ${met})${cpu ? `; server CPU ${cpu}` : ""}`);
};
// The server's own CPU microseconds per call of the last throughput measured with its pid:
// steadier than requests per second on a shared machine, where the server waits for a core.
let lastCpuUs = Number.NaN;
const us = (n: number) => `${Math.round(n)} us/call`;
/** A path's CPU per call, and its ratio to a reference's measured in the same run. */
const cpuAgainst = (cpu: number, reference: number, name: string) =>
  `${us(cpu)} (${(cpu / reference).toFixed(1)}x ${name})`;
const yes = (ok: boolean) => (ok ? "met" : "MISSED");

// --- references -----------------------------------------------------------------------------
const refPort = await freePort();
let child = await startChild(
  ["dist/bench/baseline-servers.js", "fastify", String(refPort)],
  refPort,
);
const baseline = await throughput({ url: `http://127.0.0.1:${refPort}/constant` }, child.pid);
const baselineCpu = lastCpuUs;
// The floor of the one-call-at-a-time latencies below: the same client, the bare route.
const roundTrip =
  want("list") || want("create")
    ? await latency(async () => {
        const res = await fetch(`http://127.0.0.1:${refPort}/constant`);
        await res.arrayBuffer();
      })
    : undefined;
await stop(child);
row("baseline: bare fastify constant JSON", rps(baseline), "reference", "-", us(baselineCpu));
if (roundTrip) {
  row("reference: bare fastify round trip, one call at a time", p99(roundTrip), "reported", "-");
}

// The same call as Gatehouse's below: the same token in the metadata, the same uid, and the
// same answer (leafBytes), so that the client's work is the same on both sides.
child = await startChild(
  ["dist/bench/baseline-servers.js", "grpc", String(refPort), leafBytes],
  refPort,
);
const grpcBaseline = await grpcThroughput(refPort, auth, m.leaf, child.pid);
const grpcBaselineCpu = lastCpuUs;
await stop(child);
row("baseline: bare grpc-js GetGroup", rps(grpcBaseline), "reference", "-", us(grpcBaselineCpu));

// Not a goal: what the library that serves Gatehouse's gRPC and Connect does on its own.
if (want("grpc")) {
  child = await startChild(["dist/bench/baseline-servers.js", "connect", String(refPort)], refPort);
  const connectFloor = await grpcThroughput(refPort, {}, "0".repeat(40), child.pid);
  await stop(child);
  row(
    "reference: bare connect-node GetGroup over gRPC (grpc-js)",
    rps(connectFloor),
    "reported",
    `${pct(connectFloor / grpcBaseline)} of bare grpc-js`,
    cpuAgainst(lastCpuUs, grpcBaselineCpu, "bare grpc-js"),
  );
}

// --- Gatehouse --------------------------------------------------------------------------------
/** The Gatehouse child's settings; `more` adds to them (the metrics section's port). */
function serverEnv(more: Record<string, string> = {}): Record<string, string> {
  return {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: baseUrl,
    GATEHOUSE_DB: dbPath,
    // Per-request info lines would measure the logger; warnings and errors still show.
    GATEHOUSE_LOG_LEVEL: "warn",
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    GATEHOUSE_REGISTRY_AUDIENCE: registryService,
    // The environment it ships with (src/node-flags.ts), unless this run's own says otherwise.
    ...Object.fromEntries(
      Object.entries(serverEnvironment).filter(([k]) => process.env[k] === undefined),
    ),
    ...more,
  };
}
const server = await startChild(
  [
    ...serverFlags,
    ...(profile ? ["--cpu-prof", "--cpu-prof-dir=data/bench/profiles"] : []),
    "bin/gatehouse.js",
  ],
  port,
  serverEnv(),
  ["serve"],
);
let peakRss = 0;
// The peak per section, printed at the end: which work makes the server grow.
let phase = "start-up";
const peakByPhase = new Map<string, number>();
const memory = setInterval(() => {
  const rss = memoryOf(server.pid!).rss;
  peakRss = Math.max(peakRss, rss);
  peakByPhase.set(phase, Math.max(peakByPhase.get(phase) ?? 0, rss));
}, 200);

const getUrl = `${baseUrl}/iam/v2beta1/groups/${m.leaf}`;
const connectGetUrl = `${baseUrl}/gatehouse.iam.v2beta1.GroupsService/GetGroup`;
const connectLoad: Load = {
  url: connectGetUrl,
  method: "POST",
  headers: { ...auth, "content-type": "application/json" },
  body: JSON.stringify({ uid: m.leaf }),
};
// Each protocol's closed-loop capacity, measured once: the open-loop rates are shares of it.
const capacity: Record<"rest" | "grpc" | "connect", number | undefined> = {
  rest: undefined,
  grpc: undefined,
  connect: undefined,
};
if (want("rest")) {
  phase = "rest";
  const rest = await throughput({ url: getUrl, headers: auth }, server.pid);
  capacity.rest = rest;
  row(
    "authorized REST GetGroup",
    rps(rest),
    ">= 35% of baseline",
    `${pct(rest / baseline)} ${yes(rest / baseline >= 0.35)}`,
    cpuAgainst(lastCpuUs, baselineCpu, "bare fastify"),
  );
}
if (want("grpc")) {
  phase = "grpc";
  const grpcRps = await grpcThroughput(port, auth, m.leaf, server.pid);
  capacity.grpc = grpcRps;
  row(
    "authorized gRPC GetGroup (grpc-js), one port (lean unary path)",
    rps(grpcRps),
    ">= 70% of bare grpc-js",
    `${pct(grpcRps / grpcBaseline)} ${yes(grpcRps / grpcBaseline >= 0.7)}`,
    cpuAgainst(lastCpuUs, grpcBaselineCpu, "bare grpc-js"),
  );
}
if (want("connect")) {
  phase = "connect";
  const connect = await throughput(connectLoad, server.pid);
  capacity.connect = connect;
  row(
    "authorized Connect GetGroup",
    rps(connect),
    "reported",
    `${pct(connect / baseline)} of baseline`,
    cpuAgainst(lastCpuUs, baselineCpu, "bare fastify"),
  );
}

// Open loop: requests on a fixed schedule, latency from the scheduled send time (no
// coordinated omission), at shares of each protocol's own capacity.
const restSend = httpSender(keepAlive, getUrl, { headers: auth });
let restAtHalf: OpenLoopResult | undefined;
if (want("latency")) {
  phase = "latency";
  capacity.rest ??= await throughput({ url: getUrl, headers: auth });
  capacity.grpc ??= await grpcThroughput(port, auth, m.leaf);
  capacity.connect ??= await throughput(connectLoad);
  // The open loop calls gRPC through node:http2 directly (bench/h2-grpc-sender.ts): the
  // grpc-js client's own garbage collections in this process were counted as latency.
  const grpcCall = h2GrpcSender(port, auth, m.leaf);
  const senders = {
    rest: restSend,
    grpc: grpcCall.send,
    connect: httpSender(keepAlive, connectGetUrl, connectLoad),
  };
  for (const protocol of ["rest", "grpc", "connect"] as const) {
    for (const share of [0.25, 0.5, 0.75]) {
      const rate = Math.round(capacity[protocol]! * share);
      const r = await openLoopRun(rate, senders[protocol]);
      if (protocol === "rest" && share === 0.5) restAtHalf = r;
      const goal = share === 0.5 ? 2 : share === 0.75 ? 5 : undefined;
      row(
        `open loop ${protocol} GetGroup at ${pct(share)} of capacity (${rps(rate)})`,
        openLoopFigure(r),
        goal === undefined ? "reported" : `p99 <= ${goal} ms`,
        goal === undefined ? "-" : yes(r.p99 <= goal && r.errors === 0),
      );
    }
  }
  grpcCall.close();
}

const listUrl = (q: Record<string, string>) =>
  `${baseUrl}/iam/v2beta1/groups?${new URLSearchParams({ "uidp.descendantsOf": m.root, ...q })}`;
const list = async (q: Record<string, string>) => {
  const res = await fetch(listUrl(q), { headers: auth });
  if (!res.ok) throw new Error(`ListGroups: ${res.status} ${await res.text()}`);
  return (await res.json()) as { groups: unknown[]; nextPageToken?: string; totalCount: string };
};
if (want("list")) {
  phase = "list";
  const first = await list({ pageSize: "50" });
  if (first.groups.length !== 50 || Number(first.totalCount) < 100_000) {
    throw new Error(`ListGroups: ${first.groups.length} groups of ${first.totalCount}`);
  }
  const listDefault = await latency(() => get(listUrl({ pageSize: "50" })), server.pid);
  row(
    "ListGroups 100k descendants, first 50 + totalCount, p99",
    p99(listDefault),
    "<= 5 ms",
    yes(listDefault.p99 <= 5),
    cpuAgainst(lastCpuUs, baselineCpu, "bare fastify"),
  );

  // Walk 250 pages of 200 (50,000 groups in), then time the page after.
  let token = "";
  for (let i = 0; i < 250; i++) {
    token = (
      await list({ pageSize: "200", orderBy: "name", ...(token ? { pageToken: token } : {}) })
    ).nextPageToken!;
  }
  // The first and the deep page take turns, so that the machine's noise falls on both alike.
  const [listByName, listDeep] = (await latencies([
    () => get(listUrl({ pageSize: "50", orderBy: "name" })),
    () => get(listUrl({ pageSize: "50", orderBy: "name", pageToken: token })),
  ])) as [Latency, Latency];
  row(
    "ListGroups by name, first page, p99",
    p99(listByName),
    "<= 25 ms",
    yes(listByName.p99 <= 25),
  );
  row(
    "ListGroups by name, page 50,000 deep, p99",
    p99(listDeep),
    "<= 25 ms, p50 <= first page's (+10%)",
    yes(listDeep.p99 <= 25 && listDeep.p50 <= listByName.p50 * 1.1),
  );
}

if (want("sts")) {
  phase = "sts";
  const oidcToken = await issuer.issue();
  const sts = await throughput(
    {
      url: `${baseUrl}/sts/exchange`,
      method: "POST",
      headers: { authorization: `Bearer ${oidcToken}`, "content-type": "application/json" },
      body: JSON.stringify({ aud: baseUrl, identity: workload.uid }),
    },
    server.pid,
  );
  row(
    "STS exchanges (loopback issuer, cached JWKS), one token again and again",
    rps(sts),
    ">= 2,000/s",
    yes(sts >= 2000),
    cpuAgainst(lastCpuUs, baselineCpu, "bare fastify"),
  );
  // Each exchange with a token never seen: the signature check runs every time.
  const fresh = await Promise.all(Array.from({ length: 3000 }, () => issuer.issue()));
  let next = 0;
  // autocannon ends an `amount` run only on its next one-second tick, so its duration is
  // rounded up to whole seconds: time the answers themselves.
  let done = 0;
  let firstStart = 0;
  let lastAnswer = 0;
  const stsFresh = await autocannon({
    url: `${baseUrl}/sts/exchange`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ aud: baseUrl, identity: workload.uid }),
    connections: 50,
    amount: fresh.length,
    requests: [
      {
        setupRequest: (req) => {
          if (firstStart === 0) firstStart = performance.now();
          return {
            ...req,
            headers: { ...req.headers, authorization: `Bearer ${fresh[next++ % fresh.length]}` },
          };
        },
        onResponse: () => {
          done++;
          lastAnswer = performance.now();
        },
      },
    ],
  });
  if (stsFresh.non2xx > 0 || stsFresh.errors > 0) throw new Error("STS (fresh tokens) failed");
  row(
    "STS exchanges, a new token each time (3,000 tokens, RS256)",
    rps(done / ((lastAnswer - firstStart) / 1000)),
    "reported",
    "-",
  );
}

if (want("registry")) {
  phase = "registry";
  // What a registry client does before each push or pull, against the STS exchange a CI job
  // would use for a registry-audience token instead: both in this run, on this server.
  const oidcToken = await issuer.issue();
  const exchange = await throughput({
    url: `${baseUrl}/sts/exchange`,
    method: "POST",
    headers: { authorization: `Bearer ${oidcToken}`, "content-type": "application/json" },
    body: JSON.stringify({ aud: registryService, identity: workload.uid }),
  });
  const check = await fetch(
    `${baseUrl}/registry/token?service=${registryService}&scope=repository:${registryName}:pull,push`,
    {
      headers: { authorization: `Basic ${Buffer.from(`bench:${adminToken}`).toString("base64")}` },
    },
  );
  const granted = ((await check.json()) as { token?: string }).token ?? "";
  const payload = JSON.parse(
    Buffer.from(granted.split(".")[1] ?? "", "base64url").toString() || "{}",
  );
  if (check.status !== 200 || payload.access?.[0]?.actions?.join(",") !== "pull,push") {
    throw new Error(`registry token endpoint: ${check.status} ${JSON.stringify(payload.access)}`);
  }
  const tokens = await throughput({
    url: `${baseUrl}/registry/token?service=${registryService}&scope=repository:${registryName}:pull,push`,
    headers: { authorization: `Basic ${Buffer.from(`bench:${adminToken}`).toString("base64")}` },
  });
  const anonymous = await throughput({
    url: `${baseUrl}/registry/token?service=${registryService}&scope=repository:${registryName}:pull`,
  });
  row("STS exchange for the registry audience (reference)", rps(exchange), "reference", "-");
  row(
    "registry token endpoint, Gatehouse token as password, pull,push on a repo at the root",
    rps(tokens),
    "reported against the STS exchange",
    `${(tokens / exchange).toFixed(2)}x`,
  );
  row(
    "registry token endpoint, anonymous pull of a private repo (empty grant)",
    rps(anonymous),
    "reported against the STS exchange",
    `${(anonymous / exchange).toFixed(2)}x`,
  );
}

if (want("create")) {
  phase = "create";
  // The disk's own floor: one small row committed with synchronous=FULL, WAL, same disk.
  const floor = await sqliteCommitFloor("data/bench/floor.db");
  row("disk floor: bare SQLite FULL commit of one small row, p99", p99(floor), "reference", "-");
  let n = 0;
  const createOnce = async () => {
    const res = await fetch(`${baseUrl}/iam/v2beta1/groups/${m.deepParent}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: `bench-${Date.now()}-${n++}` }),
    });
    if (res.status !== 200) throw new Error(`CreateGroup: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const t0 = performance.now();
  const create = await latency(createOnce, server.pid);
  const sequentialRate = n / ((performance.now() - t0) / 1000);
  row(
    `CreateGroup under a depth-4 parent, p99 (${n} made)`,
    p99(create),
    "p99 <= 1.5x the disk floor",
    `${(create.p99 / floor.p99).toFixed(1)}x ${yes(create.p99 <= 1.5 * floor.p99)}`,
    cpuAgainst(lastCpuUs, baselineCpu, "bare fastify"),
  );
  // 50 creates in flight at once: what a writer that batches commits can make of them.
  let made = 0;
  const until = performance.now() + seconds * 1000;
  const t1 = performance.now();
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (performance.now() < until) {
        await createOnce();
        made++;
      }
    }),
  );
  const concurrentRate = made / ((performance.now() - t1) / 1000);
  row(
    "CreateGroup, 50 in flight",
    `${rps(concurrentRate)} (one at a time: ${rps(sequentialRate)})`,
    ">= 5x one at a time",
    `${(concurrentRate / sequentialRate).toFixed(1)}x ${yes(concurrentRate >= 5 * sequentialRate)}`,
  );
}

if (want("mixed")) {
  phase = "mixed";
  // Reads at half the REST capacity while writes run beside them, on their own schedules.
  capacity.rest ??= await throughput({ url: getUrl, headers: auth });
  const readRate = Math.round(capacity.rest / 2);
  restAtHalf ??= await openLoopRun(readRate, restSend);
  const oidcToken = await issuer.issue();
  const stsSend = httpSender(keepAlive, `${baseUrl}/sts/exchange`, {
    method: "POST",
    headers: { authorization: `Bearer ${oidcToken}`, "content-type": "application/json" },
    body: JSON.stringify({ aud: baseUrl, identity: workload.uid }),
  });
  let made = 0;
  const createSend = () =>
    httpSender(keepAlive, `${baseUrl}/iam/v2beta1/groups/${m.deepParent}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: () => JSON.stringify({ name: `mixed-${Date.now()}-${made++}` }),
    })();
  const mixes: [string, OpenLoopLoad[]][] = [
    ["CreateGroup 50/s", [{ rate: 50, send: createSend }]],
    ["CreateGroup 200/s", [{ rate: 200, send: createSend }]],
    ["STS exchange 500/s", [{ rate: 500, send: stsSend }]],
  ];
  for (const [label, writes] of mixes) {
    const [reads, ...others] = await Promise.all([
      openLoopRun(readRate, restSend),
      ...writes.map((w) => openLoopRun(w.rate, w.send)),
    ]);
    row(
      `mixed: REST GetGroup at ${rps(readRate)} while ${label}`,
      `${openLoopFigure(reads!)}; writes p99 ${ms(others[0]!.p99)}, ${others[0]!.errors} failed`,
      `read p99 <= 2x reads alone (${ms(restAtHalf.p99)})`,
      `${(reads!.p99 / restAtHalf.p99).toFixed(1)}x ${yes(reads!.p99 <= 2 * restAtHalf.p99 && reads!.errors === 0)}`,
    );
  }
}

// The PostgreSQL section's ratios: the SQLite server's capacities, measured while it is up.
if (want("postgres")) {
  phase = "postgres";
  capacity.rest ??= await throughput({ url: getUrl, headers: auth });
  capacity.grpc ??= await grpcThroughput(port, auth, m.leaf);
}

clearInterval(memory);
console.log(
  `server peak RSS by section: ${[...peakByPhase].map(([k, v]) => `${k} ${mb(v)}`).join(", ")}`,
);
const mem = memoryOf(server.pid!);
peakRss = Math.max(peakRss, mem.rss);
row(
  "server resident memory (peak RSS / VmHWM)",
  `${mb(peakRss)} / ${mb(mem.hwm)}`,
  "<= 250 MB",
  yes(mem.hwm <= 250 * 1024),
);
await stop(server);
await issuer.stop();

// Metrics on against off (GATEHOUSE_METRICS_PORT), the same server otherwise, one at a time
// on the same port and database, alternating off/on twice so that a shared machine's drift
// falls on both sides.
if (want("metrics")) {
  phase = "metrics";
  const metricsPort = await freePort();
  const measure = async (on: boolean) => {
    const child = await startChild(
      [...serverFlags, "bin/gatehouse.js"],
      port,
      serverEnv(on ? { GATEHOUSE_METRICS_PORT: String(metricsPort) } : {}),
      ["serve"],
    );
    const rest = await throughput({ url: getUrl, headers: auth });
    const grpc = await grpcThroughput(port, auth, m.leaf);
    let counted = 0;
    if (on) {
      // The figure is only worth something if the calls were counted.
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      for (const line of text.split("\n")) {
        if (
          line.startsWith("gatehouse_rpc_requests_total{") &&
          line.includes('method="GetGroup"')
        ) {
          counted += Number(line.slice(line.lastIndexOf(" ") + 1));
        }
      }
      if (counted === 0) throw new Error("metrics on, but no GetGroup call was counted");
    }
    await stop(child);
    return { rest, grpc };
  };
  const runs: { on: boolean; rest: number; grpc: number }[] = [];
  for (const on of [false, true, false, true]) runs.push({ on, ...(await measure(on)) });
  const mean = (on: boolean, k: "rest" | "grpc") =>
    runs.filter((r) => r.on === on).reduce((sum, r) => sum + r[k], 0) / 2;
  for (const [k, label] of [
    ["rest", "REST GetGroup"],
    ["grpc", "gRPC GetGroup (grpc-js, lean path)"],
  ] as const) {
    const off = mean(false, k);
    const on = mean(true, k);
    row(
      `${label} with metrics on (GATEHOUSE_METRICS_PORT) against off, mean of two each`,
      `${rps(on)} against ${rps(off)}`,
      ">= 95% of off",
      `${pct(on / off)} ${yes(on / off >= 0.95)}`,
    );
  }
}

// With the SQLite server stopped: Gatehouse on PostgreSQL, one to three replicas (bench/postgres.ts).
if (want("postgres")) {
  phase = "postgres";
  await postgresBench({
    seconds,
    // `--pg-depth=3`: a 1,111-group tree, seeded in seconds, to try the section out.
    depth: Number(process.argv.find((a) => a.startsWith("--pg-depth="))?.slice(11) ?? 5),
    hasTaskset,
    row,
    throughput,
    grpcThroughput,
    sqlite: { rest: capacity.rest!, grpc: capacity.grpc! },
  });
}
if (only) printTable();
else writeResults();

// --- helpers ----------------------------------------------------------------------------------

interface Load {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  overallRate?: number;
}

async function autocannonRun(load: Load): Promise<autocannon.Result> {
  const result = await autocannon({
    url: load.url,
    method: load.method ?? "GET",
    headers: load.headers ?? {},
    ...(load.body === undefined ? {} : { body: load.body }),
    connections: load.connections ?? 50,
    ...(load.overallRate === undefined ? {} : { overallRate: load.overallRate }),
    duration: seconds,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${load.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  return result;
}

/**
 * Requests per second with 50 connections for the measurement time (after a 1 s warm-up).
 * With `serverPid`, lastCpuUs is that process's CPU microseconds per request answered.
 */
async function throughput(load: Load, serverPid?: number): Promise<number> {
  await autocannon({ url: load.url, duration: 1, connections: 10, ...pick(load) });
  const cpu0 = serverPid ? processCpuMs(serverPid) : 0;
  const result = await autocannonRun(load);
  if (serverPid) lastCpuUs = ((processCpuMs(serverPid) - cpu0) * 1000) / result.requests.total;
  return result.requests.average;
}

function pick(load: Load) {
  return {
    method: load.method ?? "GET",
    headers: load.headers ?? {},
    ...(load.body === undefined ? {} : { body: load.body }),
  };
}

/**
 * Calls a second with 50 in flight on one grpc-js channel. With `serverPid`, it also prints
 * how busy the server and this generator were: a server far from 100% means the figure is
 * bound by the client or the channel, not by the server.
 */
async function grpcThroughput(
  target: number,
  headers: Record<string, string>,
  uid: string,
  serverPid?: number,
): Promise<number> {
  const caller = grpcCaller(target, headers, uid);
  const call = caller.send;
  const runFor = async (ms: number) => {
    let done = 0;
    const until = performance.now() + ms;
    const worker = async () => {
      while (performance.now() < until) {
        await call();
        done++;
      }
    };
    const t = performance.now();
    await Promise.all(Array.from({ length: 50 }, worker));
    return done / ((performance.now() - t) / 1000);
  };
  await runFor(1000);
  const t0 = performance.now();
  const own0 = process.cpuUsage();
  const srv0 = serverPid ? processCpuMs(serverPid) : 0;
  const rate = await runFor(seconds * 1000);
  if (serverPid) {
    const wall = performance.now() - t0;
    const own = process.cpuUsage(own0);
    const srv = processCpuMs(serverPid) - srv0;
    lastCpuUs = (srv * 1000) / ((rate * wall) / 1000);
    console.log(
      `    CPU while measured: server ${pct(srv / wall)}, this generator ${pct((own.user + own.system) / 1000 / wall)} (of one core each)`,
    );
  }
  caller.close();
  return rate;
}

interface OpenLoopLoad {
  rate: number;
  send: () => Promise<void>;
}

/**
 * One open-loop run of the measurement time, after a one-second warm-up at the same rate,
 * with the share of it that the server's and this generator's main threads spent runnable
 * but without a core (schedstat): on a shared machine that, not the server, makes the tails
 * (bench/tails.ts; RESULTS.md, "Open-loop tails, explained").
 */
async function openLoopRun(
  rate: number,
  send: () => Promise<void>,
): Promise<OpenLoopResult & { waited: string }> {
  await openLoop({ rate, seconds: 1, send });
  const load = loadavg()[0]!;
  const before = [schedstat(server.pid!), schedstat(process.pid)];
  const t = performance.now();
  const r = await openLoop({ rate, seconds, send });
  const share = (i: number, now: [number, number]) =>
    pct((now[1] - before[i]![1]) / (performance.now() - t));
  const waited = `waited for a core: server ${share(0, schedstat(server.pid!))}, generator ${share(1, schedstat(process.pid))}; load ${load.toFixed(1)}`;
  return { ...r, waited };
}

function openLoopFigure(r: OpenLoopResult & { waited: string }): string {
  const failed = r.errors > 0 ? `, ${r.errors} failed (${String(r.firstError)})` : "";
  return `p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, p99.9 ${ms(r.p999)}${failed} (${r.waited})`;
}

/** p50/p99 of committing one small row with synchronous=FULL in WAL mode, one at a time. */
async function sqliteCommitFloor(path: string): Promise<Latency> {
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)");
  const insert = db.prepare("INSERT INTO t (name) VALUES (?)");
  let i = 0;
  const result = await latency(async () => {
    insert.run(`row-${i++}`);
  });
  db.close();
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
  return result;
}

/** Latency percentiles of `fn` called one at a time for the measurement time. */
interface Latency {
  p50: number;
  p99: number;
}

/** With `serverPid`, lastCpuUs is that process's CPU microseconds per call of `fn`. */
async function latency(fn: () => Promise<void>, serverPid?: number): Promise<Latency> {
  return (await latencies([fn], serverPid))[0]!;
}

/** Latency percentiles of each of `fns`, called in turn, one at a time, for the measurement time. */
async function latencies(fns: (() => Promise<void>)[], serverPid?: number): Promise<Latency[]> {
  // Warm-up: one second, so that the JIT has compiled the path before it is timed.
  const warm = performance.now() + 1000;
  while (performance.now() < warm) for (const fn of fns) await fn();
  const times: number[][] = fns.map(() => []);
  const until = performance.now() + seconds * 1000;
  const cpu0 = serverPid ? processCpuMs(serverPid) : 0;
  while (performance.now() < until) {
    for (const [i, fn] of fns.entries()) {
      const t = performance.now();
      await fn();
      times[i]!.push(performance.now() - t);
    }
  }
  if (serverPid) {
    const calls = times.reduce((n, ts) => n + ts.length, 0);
    lastCpuUs = ((processCpuMs(serverPid) - cpu0) * 1000) / calls;
  }
  return times.map((ts) => {
    ts.sort((a, b) => a - b);
    const at = (q: number) => ts[Math.min(ts.length - 1, Math.floor(q * ts.length))]!;
    return { p50: at(0.5), p99: at(0.99) };
  });
}

async function get(url: string): Promise<void> {
  const res = await fetch(url, { headers: auth });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  await res.arrayBuffer();
}

/** Start `node <args>` pinned to core 0 and wait until `port` accepts connections. */
async function startChild(
  nodeArgs: string[],
  childPort: number,
  env: Record<string, string> = {},
  extra: string[] = [],
): Promise<ChildProcess> {
  const cmd = [process.execPath, ...nodeArgs, ...extra];
  const proc = hasTaskset
    ? spawn("taskset", ["-c", "0", ...cmd], { stdio: "inherit", env: { ...process.env, ...env } })
    : spawn(cmd[0]!, cmd.slice(1), { stdio: "inherit", env: { ...process.env, ...env } });
  const deadline = Date.now() + 30_000;
  while (!(await accepts(childPort))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${nodeArgs.join(" ")} did not start`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return proc;
}

/** VmRSS and VmHWM of a process, in KiB. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

function commandExists(cmd: string): boolean {
  try {
    execFileSync(cmd, ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function rps(n: number): string {
  return `${Math.round(n).toLocaleString("en-US")} req/s`;
}
function pct(r: number): string {
  return `${Math.round(r * 100)}%`;
}
function ms(n: number): string {
  return `${n.toFixed(2)} ms`;
}
function p99(l: Latency): string {
  return `${ms(l.p99)} (p50 ${ms(l.p50)})`;
}
function mb(kib: number): string {
  return `${Math.round(kib / 1024)} MB`;
}

function table(): string {
  return [
    "| figure | value | goal | ratio / met | server CPU per call |",
    "|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.figure} | ${r.value} | ${r.goal} | ${r.met} | ${r.cpu} |`),
  ].join("\n");
}

function printTable(): void {
  console.log(
    `\n${table()}\n\nload average ${startLoad} at the start, ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} at the end (--only: bench/RESULTS.md left alone)`,
  );
}

function writeResults(): void {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "?";
  const text = `# Benchmark results

Machine: ${cpu}, ${cpus().length} cores; Node ${process.version}; ${new Date().toISOString()}.
Server pinned to core 0 ${hasTaskset ? "(taskset)" : "(no taskset: not pinned)"}, load generator on core 1; ${seconds} s per measurement after a warm-up.
Dataset: ${m.groups.toLocaleString("en-US")} groups (fan-out 10, depth 5), ${m.identities.toLocaleString("en-US")} identities, ${m.bindings.toLocaleString("en-US")} role bindings, ${m.repos.toLocaleString("en-US")} repos, ${m.tags.toLocaleString("en-US")} tags; seeded through the Store API in ${(m.seedMs / 1000).toFixed(1)} s (batched in transactions of 5,000).
Server CPU per call: the server process's CPU time (user + system, /proc/<pid>/stat, every thread) over the calls answered while measured, beside the bare reference's from the same run; it is steadier than requests per second on a shared machine. Load average at the start: ${startLoad}.
Throughput: autocannon, 50 connections (HTTP/1.1); grpc-js, one channel, 50 calls in flight. Open loops: node:http (REST, Connect) and node:http2 (gRPC) senders, latency from the scheduled send time. Latencies of ListGroups and CreateGroup: one call at a time over HTTP (REST), so they include the round trip.

${table()}
`;
  const path = "bench/RESULTS.md";
  const previous = readFileSyncOr(path);
  // The hand-written sections (every "## " heading after the table) are kept.
  const misses = /\n## [\s\S]*$/.exec(previous)?.[0] ?? "";
  writeFileSync(path, text + misses);
  console.log(`\n${table()}\n\nwrote ${path}`);
}

function readFileSyncOr(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
