/**
 * Where the open-loop tails come from. `node dist/bench/tails.js --target=<t> --rate=<n>`
 * runs one open loop (bench/open-loop.ts, latency from the scheduled send time) against a
 * server child pinned to core 0, with the generator on core 1 as in `npm run bench`, and
 * records in both processes what can stall a request (bench/stall-probe.ts): garbage
 * collections, event-loop gaps and, sampled every millisecond by the generator from
 * /proc/<pid>/task/<tid>/schedstat, the time each main thread was runnable but not running
 * (the run queue: another process or thread had its core). Slow requests (over --slow ms,
 * default 2) are grouped into stall episodes, and each episode is put down to the largest of
 * those causes it overlaps, or to nothing.
 *
 * --target: fastify (the bare baseline route), bare-grpc and bare-connect (the constant
 *   GetGroup of bench/baseline-servers.ts), rest, grpc (the main port's gRPC) or connect;
 *   --seconds (default 6, after a 1 s warm-up);
 * --server-flags="--single-threaded-gc ..." node flags for the server child, instead of the
 *   ones it ships with (src/node-flags.ts; --server-flags= for none);
 * --nice=<n>: renice both processes' threads (root, for A/B runs on a shared machine);
 * --client=h2 (grpc): call with bench/h2-grpc-sender.ts instead of grpc-js;
 * --no-pin: neither process pinned; --json=<file>: append the summary as one JSON line;
 * --writes=create:<n> (rest only): CreateGroup at n a second beside the reads, as the mixed
 *   figures of `npm run bench` run them (only the reads are measured).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import http from "node:http";
import { loadavg, setPriority } from "node:os";
import { storeRoles } from "../src/auth/capabilities.js";
import { createKeyRing } from "../src/auth/keyring.js";
import { createTokenIssuer } from "../src/auth/tokens.js";
import { serverNodeFlags } from "../src/node-flags.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { grpcCaller } from "./groups-proto.js";
import { h2GrpcSender } from "./h2-grpc-sender.js";
import { httpSender } from "./http-sender.js";
import { type OpenLoopTrace, openLoop } from "./open-loop.js";
import { accepts, freePort, stop } from "./processes.js";
import { ensureSeeded } from "./seed.js";
import { type ProbeRecord, schedstat, startProbe } from "./stall-probe.js";

const arg = (name: string) =>
  process.argv.findLast((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const target = arg("target") ?? "fastify";
const rate = Number(arg("rate") ?? 4000);
const seconds = Number(arg("seconds") ?? 6);
const slowMs = Number(arg("slow") ?? 2);
// The server's shipped node flags (src/node-flags.ts), unless --server-flags says otherwise.
const serverFlags = (arg("server-flags") ?? serverNodeFlags.join(" ")).split(" ").filter(Boolean);
const pin = !process.argv.includes("--no-pin");
// --nice=-10: both processes (every thread) ahead of the machine's other work; needs root.
const nice = Number(arg("nice") ?? 0);
// --rt=<prio>: both main threads SCHED_RR (root): the machine's other work can no longer
// delay them. The spinning generator is then throttled 50 ms a second by the kernel's
// real-time limit (sched_rt_runtime_us), which the figures still include.
const rt = arg("rt");
const rtAll = process.argv.includes("--rt-all");
// How the generator waits between sends (bench/open-loop.ts): spin, or sleep (the default
// with --rt, whose spinning generator the kernel would throttle).
const pace = (arg("pace") ?? (rt ? "sleep" : "spin")) as "spin" | "sleep";
const renice = (pid: number) => {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (nice !== 0) setPriority(Number(tid), nice);
    // The main thread only, unless --rt-all: a real-time V8 helper at the same priority
    // would hold the main thread off its core for a whole round-robin quantum (100 ms).
    if (rt && (rtAll || Number(tid) === pid)) execFileSync("chrt", ["-r", "-p", rt, tid]);
  }
};
if (pin) execFileSync("taskset", ["-pc", "1", String(process.pid)], { stdio: "ignore" });

const probeOut = `data/bench/probe-${process.pid}.json`;
const port = await freePort();
let server: ChildProcess;
let send: () => Promise<void>;
let close = () => {};
let writeLoad: { rate: number; send: () => Promise<void> } | undefined;
// --sockets=<n>: at most n connections (default 256, as run.ts has it).
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: Number(arg("sockets") ?? 256) });

if (target === "fastify") {
  server = await startChild(["dist/bench/baseline-servers.js", "fastify", String(port)], port);
  send = httpSender(keepAlive, `http://127.0.0.1:${port}/constant`, {});
} else if (target === "bare-grpc" || target === "bare-connect") {
  const kind = target.slice(5);
  server = await startChild(["dist/bench/baseline-servers.js", kind, String(port)], port);
  const c = grpcCaller(port, {}, "0".repeat(40));
  send = c.send;
  close = c.close;
} else {
  const { manifest: m } = await ensureSeeded();
  const dbPath = "data/bench/tails.db";
  for (const f of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) rmSync(f, { force: true });
  copyFileSync("data/bench/seed-v1.db", dbPath);
  chmodSync(dbPath, 0o600);
  const baseUrl = `http://127.0.0.1:${port}`;
  const store = createSqliteStore(dbPath, { roles: storeRoles });
  const keyRing = createKeyRing({ store });
  await keyRing.ensureKey();
  const token = (await createTokenIssuer({ keyRing, issuer: baseUrl }).issue(m.admin, baseUrl))
    .token;
  await store.close();
  server = await startChild(["bin/gatehouse.js", "serve"], port, {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: baseUrl,
    GATEHOUSE_DB: dbPath,
    GATEHOUSE_LOG_LEVEL: "warn",
  });
  const auth = { authorization: `Bearer ${token}` };
  const [writeKind, writeRate] = (arg("writes") ?? "").split(":");
  if (writeKind === "create") {
    let made = 0;
    const create = httpSender(keepAlive, `${baseUrl}/iam/v2beta1/groups/${m.deepParent}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: () => JSON.stringify({ name: `tails-${Date.now()}-${made++}` }),
    });
    writeLoad = { rate: Number(writeRate), send: create };
  } else if (writeKind) {
    throw new Error(`unknown --writes ${writeKind}`);
  }
  if (target === "rest") {
    send = httpSender(keepAlive, `${baseUrl}/iam/v2beta1/groups/${m.leaf}`, { headers: auth });
  } else if (target === "connect") {
    send = httpSender(keepAlive, `${baseUrl}/gatehouse.iam.v2beta1.GroupsService/GetGroup`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ uid: m.leaf }),
    });
  } else if (target === "grpc") {
    // --client=h2: the lean node:http2 sender (bench/h2-grpc-sender.ts), not grpc-js.
    const c =
      arg("client") === "h2" ? h2GrpcSender(port, auth, m.leaf) : grpcCaller(port, auth, m.leaf);
    send = c.send;
    close = c.close;
  } else {
    throw new Error(`unknown --target ${target}`);
  }
}

if (nice !== 0 || rt) {
  renice(process.pid);
  renice(server.pid!);
}
const load0 = loadavg()[0]!;
const pressure0 = cpuPressure();
// Warm-up at the same rate, then the measured run with every request's times kept.
await openLoop({ rate, seconds: Number(arg("warmup") ?? 1), send, pace });
const srvPid = server.pid!;
const samples: number[][] = []; // [abs time, server main cpu, wait, generator main cpu, wait]
let lastSample = 0;
const sample = (now: number) => {
  if (now - lastSample < 1) return;
  lastSample = now;
  try {
    samples.push([performance.timeOrigin + now, ...schedstat(srvPid), ...schedstat(process.pid)]);
  } catch {
    // The server has gone: the run fails below.
  }
};
const genProbe = startProbe();
const [result, writesResult] = await Promise.all([
  openLoop({ rate, seconds, send, pace, trace: { onTick: sample } }),
  ...(writeLoad
    ? [openLoop({ rate: writeLoad.rate, seconds, send: writeLoad.send, pace: "spin" })]
    : []),
]);
if (writesResult) {
  console.error(
    `writes: ${writesResult.completed} answered, ${writesResult.errors} failed, p99 ${writesResult.p99.toFixed(2)} ms`,
  );
}
const gen = genProbe.stop();
const pressure1 = cpuPressure();
close();
await stop(server);
const srv = JSON.parse(readFileSync(probeOut, "utf8")) as ProbeRecord;
rmSync(probeOut, { force: true });

const summary = analyse(result.trace!, gen, srv);
const line = {
  when: new Date().toISOString(),
  target,
  rate,
  seconds,
  serverFlags: serverFlags.join(" "),
  generatorFlags: process.execArgv.join(" "),
  nice,
  pace,
  rt: rt && (rtAll ? `${rt} all threads` : `${rt} main threads`),
  load1: load0,
  cpuPressure: pressure1 === undefined ? undefined : (pressure1 - pressure0!) / (seconds * 1e4),
  p50: result.p50,
  p99: result.p99,
  p999: result.p999,
  max: result.max,
  errors: result.errors,
  ...summary,
};
console.log(JSON.stringify(line, null, 1));
const json = arg("json");
if (json) appendFileSync(json, `${JSON.stringify(line)}\n`);

// --- analysis ---------------------------------------------------------------------------------

function analyse(t: OpenLoopTrace, g: ProbeRecord, s: ProbeRecord) {
  const o = performance.timeOrigin;
  const n = t.scheduled.length;
  // Only what happened during the measured run counts (not start-up or the warm-up).
  const from = o + t.scheduled[0]!;
  const to = o + Math.max(...t.done);
  for (const r of [g, s]) {
    r.gaps = r.gaps.filter((x) => x[1] >= from && x[0] <= to);
    r.gc = r.gc.filter((x) => x[0] + x[1] >= from && x[0] <= to);
  }
  const slow: number[] = [];
  let late1 = 0;
  for (let i = 0; i < n; i++) {
    if (t.sent[i]! - t.scheduled[i]! > 1) late1++;
    if (t.done[i] === 0 || t.done[i]! - t.scheduled[i]! > slowMs) slow.push(i);
  }
  // Episodes: slow requests whose [scheduled, answered] windows touch.
  const episodes: { a: number; b: number; ids: number[] }[] = [];
  for (const i of slow) {
    const a = o + t.scheduled[i]!;
    const b = o + (t.done[i] || t.sent[i]!);
    const last = episodes.at(-1);
    if (last && a <= last.b + 1) {
      last.b = Math.max(last.b, b);
      last.ids.push(i);
    } else episodes.push({ a, b, ids: [i] });
  }
  // Run-queue wait of a main thread over [a, b], from the 1 ms samples around it.
  const waitIn = (a: number, b: number, col: number) => {
    let lo = samples.findIndex((x) => x[0]! >= a - 1);
    if (lo > 0) lo--;
    let hi = samples.findIndex((x) => x[0]! > b);
    if (hi < 0) hi = samples.length - 1;
    return lo < 0 ? 0 : samples[hi]![col]! - samples[lo]![col]!;
  };
  const overlap = (list: [number, number, ...number[]][], a: number, b: number) =>
    list.reduce((sum, [x, y]) => sum + Math.max(0, Math.min(b, y) - Math.max(a, x)), 0);
  const gcSpans = (r: ProbeRecord) =>
    r.gc.filter((e) => e[2] !== 8 && e[2] !== 16).map(([x, d]) => [x, x + d] as [number, number]);
  const srvGc = gcSpans(s);
  const genGc = gcSpans(g);
  const causes: Record<string, number> = {};
  const worst: unknown[] = [];
  for (const e of episodes) {
    const ms = e.b - e.a;
    const c = {
      "server main thread off CPU (run queue)": waitIn(e.a, e.b, 2),
      "generator off CPU (run queue)": waitIn(e.a, e.b, 4),
      "server GC": overlap(srvGc, e.a, e.b),
      "generator GC": overlap(genGc, e.a, e.b),
    };
    const [cause, v] = Object.entries(c).sort((x, y) => y[1] - x[1])[0]!;
    const named = v >= Math.max(0.5, 0.25 * (ms - 1)) ? cause : "none of these";
    causes[named] = (causes[named] ?? 0) + e.ids.length;
    worst.push({
      ms: +ms.toFixed(1),
      requests: e.ids.length,
      lateSendMs: +Math.max(...e.ids.map((i) => t.sent[i]! - t.scheduled[i]!)).toFixed(2),
      serverLoopGapMs: +overlap(s.gaps, e.a, e.b).toFixed(1),
      ...Object.fromEntries(Object.entries(c).map(([k, x]) => [k, +x.toFixed(1)])),
    });
  }
  worst.sort((x, y) => (y as { ms: number }).ms - (x as { ms: number }).ms);
  const runMs = (samples.at(-1)?.[0] ?? 0) - (samples[0]?.[0] ?? 0);
  const share = (col: number) => (samples.at(-1)![col]! - samples[0]![col]!) / runMs;
  const gcStats = (spans: [number, number][]) => {
    const d = spans.map(([x, y]) => y - x).sort((x, y) => x - y);
    return {
      count: d.length,
      totalMs: +d.reduce((x, y) => x + y, 0).toFixed(1),
      maxMs: +(d.at(-1) ?? 0).toFixed(2),
      over2ms: d.filter((x) => x > 2).length,
    };
  };
  // Event-loop gaps over 2 ms, split by whether the main thread was on a CPU meanwhile.
  const onCpu = (x: [number, number, number]) => x[2] >= 0.5 * (x[1] - x[0]);
  const gapStats = (r: ProbeRecord, gc: [number, number][]) => {
    const on = r.gaps.filter(onCpu);
    return {
      over2ms: r.gaps.length,
      onCpu: on.length,
      onCpuOver5ms: on.filter((x) => x[1] - x[0] > 5).length,
      offCpuMs: +r.gaps
        .filter((x) => !onCpu(x))
        .reduce((sum, x) => sum + x[1] - x[0], 0)
        .toFixed(0),
      worstOnCpu: on
        .sort((x, y) => y[1] - y[0] - (x[1] - x[0]))
        .slice(0, 5)
        .map((x) => ({
          ms: +(x[1] - x[0]).toFixed(1),
          cpuMs: +x[2].toFixed(1),
          gcMs: +overlap(gc, x[0], x[1]).toFixed(1),
        })),
    };
  };
  // Not a goal figure: the latencies of the requests that no off-CPU gap of either process
  // touched, i.e. what this server and generator do when the machine lets them run.
  const off = [...s.gaps, ...g.gaps].filter((x) => !onCpu(x)).sort((x, y) => x[0] - y[0]);
  const untouched: number[] = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    if (t.done[i] === 0) continue;
    const a = o + t.scheduled[i]!;
    const b = o + t.done[i]!;
    while (k < off.length && off[k]![1] < a - 100) k++;
    let hit = false;
    for (let j = k; j < off.length && off[j]![0] <= b; j++) if (off[j]![1] >= a) hit = true;
    if (!hit) untouched.push(t.done[i]! - t.scheduled[i]!);
  }
  untouched.sort((x, y) => x - y);
  const q = (p: number) =>
    +(untouched[Math.min(untouched.length - 1, Math.floor(p * untouched.length))] ?? 0).toFixed(2);
  const threads = (r: ProbeRecord) =>
    r.threads
      .filter((x) => x.cpuMs > 5)
      .map((x) => `${x.name}: cpu ${x.cpuMs.toFixed(0)} ms, waited ${x.waitMs.toFixed(0)} ms`);
  return {
    requests: n,
    slow: slow.length,
    sentOver1msLate: late1,
    slowByCause: causes,
    serverMain: { cpuShare: +share(1).toFixed(2), runQueueShare: +share(2).toFixed(3) },
    generatorMain: { cpuShare: +share(3).toFixed(2), runQueueShare: +share(4).toFixed(3) },
    serverGc: gcStats(srvGc),
    generatorGc: gcStats(genGc),
    serverLoopGaps: gapStats(s, srvGc),
    generatorLoopGaps: gapStats(g, genGc),
    untouchedByOffCpuGaps: {
      requests: untouched.length,
      p50: q(0.5),
      p99: q(0.99),
      p999: q(0.999),
    },
    serverThreads: threads(s),
    generatorThreads: threads(g),
    worstEpisodes: worst.slice(0, 8),
  };
}

// --- helpers ----------------------------------------------------------------------------------

/** /proc/pressure/cpu "some" total (µs): time in which some runnable task waited for a CPU. */
function cpuPressure(): number | undefined {
  try {
    const m = /some .*total=(\d+)/.exec(readFileSync("/proc/pressure/cpu", "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function startChild(
  script: string[],
  childPort: number,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const cmd = [
    process.execPath,
    ...serverFlags,
    "--import",
    "./dist/bench/stall-probe.js",
    ...script,
  ];
  const childEnv = { ...process.env, ...env, STALL_PROBE_OUT: probeOut };
  const proc = pin
    ? spawn("taskset", ["-c", "0", ...cmd], { stdio: "inherit", env: childEnv })
    : spawn(cmd[0]!, cmd.slice(1), { stdio: "inherit", env: childEnv });
  const deadline = Date.now() + 30_000;
  while (!(await accepts(childPort))) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error("server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  // taskset execs node: the child's pid is the server's.
  return proc;
}
