/**
 * `node dist/bench/inproc-ab.js --before=<built checkout> [--paths=rest,connect,grpc]
 * [--batches=40] [--calls=200]`: this checkout's REST, Connect and lean gRPC GetGroup against
 * another build's, both served in THIS process with their clients, in short alternating
 * batches (10 calls in flight, `--calls` a batch). Everything but the GC's helpers runs on one
 * thread, so a batch's main-thread CPU time is that of both the server and the client's side
 * of its calls; the clients are the same code on both sides, so the difference of the two is
 * the servers' difference per call, and the median of many short batches leaves out those
 * that another process's bursts (cache, the other hyperthread) slowed most. On a machine at load
 * 15-18 the guard's CPU-per-call rounds (bench/guard.ts) strayed 0.3-1.6x; this is for telling
 * a few microseconds apart by hand (it is no CI guard: both builds must load in one process).
 */
import http from "node:http";
import http2 from "node:http2";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetGroupRequestSchema } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { benchServerEnv, seedOwnedOrganization } from "./guard-dataset.js";

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const beforeDir = arg("before");
if (!beforeDir) {
  console.error("usage: inproc-ab --before=<built checkout> [--paths=rest,connect,grpc]");
  process.exit(2);
}
const paths = (arg("paths") ?? "rest,connect,grpc").split(",");
const batches = Number(arg("batches") ?? 40);
const callsPerBatch = Number(arg("calls") ?? 200);
const inFlight = 10;

interface Side {
  name: string;
  port: number;
  leaf: string;
  token: string;
  close: () => Promise<void>;
}

/** A Gatehouse of the build in `dir`, on its own database file, seeded and listening. */
async function startSide(name: string, dir: string): Promise<Side> {
  const mod = (p: string) => import(pathToFileURL(resolve(dir, "dist", p)).href);
  const { ownerRole, storeRoles } = await mod("src/auth/capabilities.js");
  const { loadConfig } = await mod("src/config.js");
  const { createServer } = await mod("src/server.js");
  const { createSqliteStore } = await mod("src/store/sqlite/sqlite-store.js");
  const { newChildUid, newRootUid } = await mod("src/uid.js");
  const db = `/tmp/gatehouse-inproc-${process.pid}-${name}.db`;
  const config = loadConfig([], benchServerEnv(db));
  const store = createSqliteStore(config.dbPath, { roles: storeRoles });
  const now = Date.now();
  const ids = { newRootUid, newChildUid, ownerRoleUid: ownerRole.uid };
  const { person, org } = await seedOwnedOrganization(store, ids, "inproc", now);
  let parent = org;
  for (let depth = 0; depth < 3; depth++) {
    const uid = newChildUid(parent);
    await store.createGroup({ uid, parentUid: parent, name: `g${depth}`, description: "", now });
    parent = uid;
  }
  const server = await createServer({ config, store });
  const address = await server.listen();
  const { token } = await server.tokens.issue(person, config.baseUrl);
  return {
    name,
    port: address.port,
    leaf: parent,
    token,
    close: async () => {
      await server.close();
      await store.close();
      const { rmSync } = await import("node:fs");
      for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
    },
  };
}

type Send = () => Promise<void>;

function restSender(s: Side, agent: http.Agent): Send {
  const path = `/iam/v2beta1/groups/${s.leaf}`;
  const headers = { authorization: `Bearer ${s.token}` };
  return () => httpCall(agent, s.port, "GET", path, headers);
}

function connectSender(s: Side, agent: http.Agent): Send {
  const body = JSON.stringify({ uid: s.leaf });
  const headers = {
    authorization: `Bearer ${s.token}`,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  };
  return () =>
    httpCall(agent, s.port, "POST", "/gatehouse.iam.v2beta1.GroupsService/GetGroup", headers, body);
}

function httpCall(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<void> {
  return new Promise((ok, fail) => {
    const req = http.request({ agent, host: "127.0.0.1", port, method, path, headers }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? ok() : fail(new Error(`${res.statusCode}`))));
    });
    req.on("error", fail);
    req.end(body);
  });
}

function grpcSender(s: Side): { send: Send; close: () => void } {
  const message = toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: s.leaf }));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const session = http2.connect(`http://127.0.0.1:${s.port}`);
  session.on("error", () => {});
  const headers = {
    ":method": "POST",
    ":path": "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${s.token}`,
  };
  const send = () =>
    new Promise<void>((ok, fail) => {
      const stream = session.request(headers);
      let status: string | undefined;
      stream.on("response", (h) => {
        status ??= h["grpc-status"] as string | undefined;
      });
      stream.on("trailers", (t) => {
        status = t["grpc-status"] as string | undefined;
      });
      stream.on("data", () => {});
      stream.on("error", fail);
      stream.on("close", () => (status === "0" ? ok() : fail(new Error(`grpc-status ${status}`))));
      stream.end(frame);
    });
  return { send, close: () => session.close() };
}

/**
 * `calls` calls of `send`, `inFlight` at a time; the main thread's CPU time per call, in us
 * (process.threadCpuUsage: the time the thread ran, not the time it waited for a core).
 */
async function batch(send: Send, calls: number): Promise<number> {
  let left = calls;
  const t0 = process.threadCpuUsage();
  const worker = async () => {
    while (left-- > 0) await send();
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const t = process.threadCpuUsage(t0);
  return (t.user + t.system) / calls;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

const before = await startSide("before", beforeDir);
const after = await startSide("after", ".");
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
console.log(`inproc-ab: ${beforeDir} (before) against . (after); load average ${load()}`);
const agents = [new http.Agent({ keepAlive: true }), new http.Agent({ keepAlive: true })];
const closers: (() => void)[] = [];
const senders = (path: string): [Send, Send] => {
  if (path === "rest") return [restSender(before, agents[0]!), restSender(after, agents[1]!)];
  if (path === "connect") {
    return [connectSender(before, agents[0]!), connectSender(after, agents[1]!)];
  }
  const b = grpcSender(before);
  const a = grpcSender(after);
  closers.push(b.close, a.close);
  return [b.send, a.send];
};
for (const path of paths) {
  const [b, a] = senders(path);
  // Warm-up: each side's JIT compiles the path.
  for (let i = 0; i < 5; i++) {
    await batch(b, callsPerBatch);
    await batch(a, callsPerBatch);
  }
  const us: { before: number[]; after: number[] } = { before: [], after: [] };
  for (let i = 0; i < batches; i++) {
    // The first side alternates, so that a drift falls on both.
    if (i % 2 === 0) {
      us.before.push(await batch(b, callsPerBatch));
      us.after.push(await batch(a, callsPerBatch));
    } else {
      us.after.push(await batch(a, callsPerBatch));
      us.before.push(await batch(b, callsPerBatch));
    }
  }
  const mb = median(us.before);
  const ma = median(us.after);
  const diffs = us.after.map((x, i) => x - us.before[i]!);
  console.log(
    `${path} GetGroup: before ${mb.toFixed(1)} us/call, after ${ma.toFixed(1)} us/call (main-thread CPU, server and client); after - before: median of pairs ${median(diffs).toFixed(1)} us [${Math.min(...us.before).toFixed(1)}/${Math.min(...us.after).toFixed(1)} min]; ${batches} batches of ${callsPerBatch}`,
  );
}
for (const c of closers) c();
for (const a of agents) a.destroy();
await before.close();
await after.close();
console.log(`load average ${load()}`);
process.exit(0);
