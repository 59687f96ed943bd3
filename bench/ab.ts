/**
 * `npm run build && node dist/bench/ab.js --before=<checkout> [--rounds=3] [--seconds=2]`:
 * the same calls against this checkout's server and another, built checkout's (`npm ci &&
 * npm run build` there, or its dist/ and a node_modules link), in the same run: per path
 * (REST, the lean gRPC and Connect paths, and the Connect router with the lean paths off),
 * requests per second and the server's CPU milliseconds per request of each side, and their
 * ratio. The sides alternate in short rounds, so that both see the same machine; on a shared
 * machine CPU per request is the steadier figure, requests per second the one users see.
 * Servers are pinned to core 0 (taskset, where present), the load to core 1, as in run.ts.
 * `--only=rest,grpc`: only the paths whose name has one of these words (REST, gRPC, Connect,
 * lean, router).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, copyFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import autocannon from "autocannon";
import { storeRoles } from "../src/auth/capabilities.js";
import { createKeyRing } from "../src/auth/keyring.js";
import { createTokenIssuer } from "../src/auth/tokens.js";
import { serverNodeFlags } from "../src/node-flags.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { grpcCaller } from "./groups-proto.js";
import { accepts, freePort, pinToCore1, processCpuMs, stop } from "./processes.js";
import { ensureSeeded } from "./seed.js";

const hasTaskset = pinToCore1();

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const before = arg("before");
if (!before) throw new Error("usage: node dist/bench/ab.js --before=<built checkout>");
const rounds = Number(arg("rounds") ?? 3);
// `--only=rest,lean`: the paths whose name contains one of these words (any case).
const only = arg("only")?.toLowerCase().split(",");
const seconds = Number(arg("seconds") ?? 2);

const { manifest: m } = await ensureSeeded();
const dbPath = "data/bench/ab.db";
for (const f of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) rmSync(f, { force: true });
copyFileSync("data/bench/seed-v1.db", dbPath);
chmodSync(dbPath, 0o600);
// One base URL for every server: the admin's token is good on each.
const baseUrl = "http://127.0.0.1:1";
const store = createSqliteStore(dbPath, { roles: storeRoles });
const keyRing = createKeyRing({ store });
await keyRing.ensureKey();
const token = (await createTokenIssuer({ keyRing, issuer: baseUrl }).issue(m.admin, baseUrl)).token;
await store.close();
const auth = { authorization: `Bearer ${token}` };

interface Side {
  name: "before" | "after";
  lean: { port: number; proc: ChildProcess };
  router: { port: number; proc: ChildProcess };
}

async function startServer(checkout: string, leanPaths: boolean) {
  const port = await freePort();
  const cmd = [process.execPath, ...serverNodeFlags, join(checkout, "bin/gatehouse.js"), "serve"];
  const env = {
    ...process.env,
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: baseUrl,
    GATEHOUSE_DB: resolve(dbPath),
    GATEHOUSE_LOG_LEVEL: "warn",
    GATEHOUSE_LEAN_PATHS: String(leanPaths),
  };
  const proc = hasTaskset
    ? spawn("taskset", ["-c", "0", ...cmd], { stdio: "inherit", env })
    : spawn(cmd[0]!, cmd.slice(1), { stdio: "inherit", env });
  const deadline = Date.now() + 60_000;
  while (!(await accepts(port))) {
    if (proc.exitCode !== null || Date.now() > deadline)
      throw new Error(`${checkout} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, proc };
}

const sides: Side[] = [];
for (const [name, checkout] of [
  ["before", resolve(before)],
  ["after", resolve(".")],
] as const) {
  sides.push({
    name,
    lean: await startServer(checkout, true),
    router: await startServer(checkout, false),
  });
}

type Path = {
  name: string;
  server: "lean" | "router";
  run: (port: number, ms: number) => Promise<number>;
};
const http = (method: "GET" | "POST", path: string, body?: string, type?: string) => {
  return async (port: number, ms: number) => {
    const r = await autocannon({
      url: `http://127.0.0.1:${port}${path}`,
      method,
      headers: { ...auth, ...(type ? { "content-type": type } : {}) },
      ...(body === undefined ? {} : { body }),
      connections: 50,
      duration: ms / 1000,
    });
    if (r.non2xx > 0 || r.errors > 0)
      throw new Error(`${path}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return r.requests.total;
  };
};
const grpc = async (port: number, ms: number) => {
  const caller = grpcCaller(port, auth, m.leaf);
  let done = 0;
  const until = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < until) {
      await caller.send();
      done++;
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
  caller.close();
  return done;
};
const connectPath = "/gatehouse.iam.v2beta1.GroupsService/GetGroup";
const connectBody = JSON.stringify({ uid: m.leaf });
const allPaths: Path[] = [
  { name: "REST GetGroup", server: "lean", run: http("GET", `/iam/v2beta1/groups/${m.leaf}`) },
  { name: "gRPC GetGroup, lean path", server: "lean", run: grpc },
  {
    name: "Connect GetGroup, lean path",
    server: "lean",
    run: http("POST", connectPath, connectBody, "application/json"),
  },
  { name: "gRPC GetGroup, Connect router", server: "router", run: grpc },
  {
    name: "Connect GetGroup, Connect router",
    server: "router",
    run: http("POST", connectPath, connectBody, "application/json"),
  },
];

const paths = allPaths.filter((p) => !only || only.some((w) => p.name.toLowerCase().includes(w)));
const totals = new Map<string, { requests: number; ms: number; cpuMs: number }>();
for (let round = 0; round < rounds; round++) {
  for (const path of paths) {
    // Alternate which side goes first, so that neither always follows the other.
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const server = side[path.server];
      await path.run(server.port, 500); // warm-up
      const cpu0 = processCpuMs(server.proc.pid!);
      const t0 = performance.now();
      const requests = await path.run(server.port, seconds * 1000);
      const ms = performance.now() - t0;
      const cpuMs = processCpuMs(server.proc.pid!) - cpu0;
      const key = `${path.name}|${side.name}`;
      const t = totals.get(key) ?? { requests: 0, ms: 0, cpuMs: 0 };
      totals.set(key, { requests: t.requests + requests, ms: t.ms + ms, cpuMs: t.cpuMs + cpuMs });
      console.log(
        `round ${round + 1} ${path.name} ${side.name}: ${Math.round(requests / (ms / 1000))} req/s, ${(cpuMs / requests).toFixed(3)} CPU ms/req`,
      );
    }
  }
}
for (const side of sides) {
  await stop(side.lean.proc);
  await stop(side.router.proc);
}

console.log(
  "\n| path | before req/s | after req/s | after/before | before CPU ms/req | after CPU ms/req | after/before |",
);
console.log("|---|---|---|---|---|---|---|");
for (const path of paths) {
  const b = totals.get(`${path.name}|before`)!;
  const a = totals.get(`${path.name}|after`)!;
  const rps = (t: typeof a) => t.requests / (t.ms / 1000);
  const cpu = (t: typeof a) => t.cpuMs / t.requests;
  console.log(
    `| ${path.name} | ${Math.round(rps(b))} | ${Math.round(rps(a))} | ${(rps(a) / rps(b)).toFixed(2)} | ${cpu(b).toFixed(3)} | ${cpu(a).toFixed(3)} | ${(cpu(a) / cpu(b)).toFixed(2)} |`,
  );
}
