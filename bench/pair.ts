/**
 * `node dist/bench/pair.js --before=<built checkout> [--after=<built checkout>] [--rate=600]
 * [--windows=8] [--seconds=4] [--only=getgroup,listgroups] [--profile=<dir>]
 * [--before-env=NAME=value,...] [--after-env=...] [--before-flags="--flag ..."] [--after-flags=...]`:
 * the server CPU per lean gRPC call of two builds (or one build with two environments or two
 * sets of Node flags, added to those it ships with) served AT THE SAME TIME, for a machine
 * others load.
 *
 * bench:guard (bench/guard.ts) runs one side, then the other, with 50 calls in flight. On this
 * 2-core machine at load 15-20 its rounds stray 0.5-2x either way: the two sides never see the
 * same machine, and how many calls a server answers per turn of its event loop (its batching,
 * and with it its CPU per call) follows how much of a core it got and how fast the client was.
 * Here both sides' guard servers (bench/guard-server.ts, each checkout's own) run at once,
 * both pinned to core 0, and this process sends each of them the same open-loop rate of gRPC
 * calls over one HTTP/2 connection (node:http2, the request frame encoded once), interleaved
 * call by call, from core 1. Whatever the machine does to one side in a window it does to the
 * other; a window's figure is each server's CPU (/proc/<pid>/stat) over the calls it
 * answered, and the ratio after/before of each window is printed with the median [min..max].
 * At a rate both servers keep up with, each call arrives nearly alone: the figure is a call's
 * whole cost, with nothing shared across a batch (what the guard sees on a quiet machine).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import {
  GetGroupRequestSchema,
  ListGroupsRequestSchema,
} from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { startOidcIssuer } from "../test/helpers/oidc-issuer.js";
import { pinToCore1, processCpuMs, stop } from "./processes.js";

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const before = arg("before");
const after = resolve(arg("after") ?? ".");
const rate = Number(arg("rate") ?? 600);
const windows = Number(arg("windows") ?? 8);
const seconds = Number(arg("seconds") ?? 4);
const only = (arg("only") ?? "getgroup,listgroups").toLowerCase().split(",");
const profileDir = arg("profile");
/** `NAME=value,...` into an environment added to a side's. */
const envOf = (given: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (given ?? "")
      .split(",")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
const sideEnv = { before: envOf(arg("before-env")), after: envOf(arg("after-env")) };
const sideFlags = {
  before: (arg("before-flags") ?? "").split(" ").filter(Boolean),
  after: (arg("after-flags") ?? "").split(" ").filter(Boolean),
};
if (!before || !(rate > 0) || !(windows >= 1) || !(seconds > 0)) {
  console.error("usage: pair --before=<built checkout> [--after=.] [--rate=600] [--windows=8]");
  process.exit(2);
}
const hasTaskset = pinToCore1();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

interface Served {
  port: number;
  org: string;
  leaf: string;
  token: string;
}
interface Side {
  name: "before" | "after";
  proc: ChildProcess;
  served: Served;
}

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-pair-"));
const issuer = await startOidcIssuer();

async function startSide(name: Side["name"], checkout: string): Promise<Side> {
  const flagsFile = join(checkout, "dist/src/node-flags.js");
  const shipped = existsSync(flagsFile) ? await import(pathToFileURL(flagsFile).href) : {};
  const flags: string[] = [...(shipped.serverNodeFlags ?? []), ...sideFlags[name]];
  const prof = profileDir
    ? ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, name)}`, "--cpu-prof-interval=500"]
    : [];
  const cmd = [
    process.execPath,
    ...flags,
    ...prof,
    join(checkout, "dist/bench/guard-server.js"),
    join(tmp, `${name}.db`),
    issuer.url,
  ];
  // The flags and environment the checkout ships with (src/node-flags.ts), then the side's.
  const env = { ...process.env, ...(shipped.serverEnvironment ?? {}), ...sideEnv[name] };
  const proc = hasTaskset
    ? spawn("taskset", ["-c", "0", ...cmd], { stdio: ["ignore", "pipe", "inherit"], env })
    : spawn(cmd[0]!, cmd.slice(1), { stdio: ["ignore", "pipe", "inherit"], env });
  const served = await new Promise<Served>((ok, fail) => {
    let out = "";
    proc.stdout!.on("data", (chunk: Buffer) => {
      out += chunk;
      const nl = out.indexOf("\n");
      if (nl >= 0) ok(JSON.parse(out.slice(0, nl)) as Served);
    });
    proc.once("exit", (code) => fail(new Error(`${name}: exited with ${code}`)));
  });
  return { name, proc, served };
}

/** One HTTP/2 connection to a side sending one method's request; counts failures. */
function sender(s: Served, path: string, schema: DescMessage, message: object) {
  const bytes = toBinary(schema, create(schema, message as never));
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  const session = http2.connect(`http://127.0.0.1:${s.port}`);
  session.on("error", () => {});
  const headers = {
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${s.token}`,
  };
  const state = { inFlight: 0, done: 0, failed: 0 };
  const send = () => {
    state.inFlight++;
    const stream = session.request(headers);
    let status: string | undefined;
    stream.on("response", (h) => {
      if (typeof h["grpc-status"] === "string") status = h["grpc-status"];
    });
    stream.on("trailers", (t) => {
      if (typeof t["grpc-status"] === "string") status = t["grpc-status"];
    });
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", () => {
      state.inFlight--;
      if (status === "0") state.done++;
      else state.failed++;
    });
    stream.end(frame);
  };
  return { send, state, close: () => session.close() };
}

const methods = [
  {
    name: "gRPC GetGroup",
    path: "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    schema: GetGroupRequestSchema,
    message: (s: Served) => ({ uid: s.leaf }),
    share: 1,
  },
  {
    name: "gRPC ListGroups",
    path: "/gatehouse.iam.v2beta1.GroupsService/ListGroups",
    schema: ListGroupsRequestSchema,
    message: (s: Served) => ({ uidp: { descendantsOf: s.org }, pageSize: 20 }),
    // A page costs about five GetGroups: a fifth of the rate keeps both sides below a core.
    share: 0.2,
  },
].filter((m) => only.some((w) => m.name.toLowerCase().replace(/ /g, "").includes(w)));

/** Send `rate` x `share` calls a second to each sender, interleaved, for `ms`; sends in 5 ms ticks. */
async function drive(senders: ReturnType<typeof sender>[], ms: number, share: number) {
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < ms) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate * share);
    for (; sent < due; sent++) {
      // At most 200 in flight a side: a side that fell behind is not buried.
      for (const s of senders) if (s.state.inFlight < 200) s.send();
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  while (senders.some((s) => s.state.inFlight > 0)) await new Promise((r) => setTimeout(r, 5));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

console.log(
  `bench:pair: ${before} ${JSON.stringify(sideEnv.before)} ${sideFlags.before.join(" ")} (before) and ${after} ${JSON.stringify(sideEnv.after)} ${sideFlags.after.join(" ")} (after) at once on core ${hasTaskset ? 0 : "any"}; ${rate} calls/s to each; ${windows} windows of ${seconds} s; load average ${load()}`,
);
const sides = [await startSide("before", before), await startSide("after", after)];
try {
  const rows: string[] = [];
  for (const m of methods) {
    // Both senders in one list, alternating which goes first from window to window.
    const senders = sides.map((side) =>
      sender(side.served, m.path, m.schema, m.message(side.served)),
    );
    await drive(senders, 2000, m.share); // warm-up: each side's JIT
    const ratios: number[] = [];
    const us: Record<string, number[]> = { before: [], after: [] };
    for (let w = 0; w < windows; w++) {
      const order = w % 2 === 0 ? senders : [...senders].reverse();
      const cpu0 = sides.map((s) => processCpuMs(s.proc.pid!));
      const done0 = senders.map((s) => s.state.done);
      await drive(order, seconds * 1000, m.share);
      const per = sides.map(
        (s, i) =>
          ((processCpuMs(s.proc.pid!) - cpu0[i]!) * 1000) / (senders[i]!.state.done - done0[i]!),
      );
      us.before!.push(per[0]!);
      us.after!.push(per[1]!);
      ratios.push(per[1]! / per[0]!);
      console.log(
        `  ${m.name} window ${w + 1}: before ${per[0]!.toFixed(0)} us/call, after ${per[1]!.toFixed(0)} us/call (${(per[1]! / per[0]!).toFixed(2)}); load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
    const failed = senders.map((s) => s.state.failed);
    for (const s of senders) s.close();
    rows.push(
      `| ${m.name} | ${median(us.before!).toFixed(0)} | ${median(us.after!).toFixed(0)} | ${median(ratios).toFixed(2)} [${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)}] | ${failed.join(" / ")} |`,
    );
  }
  console.log(
    `\nserver CPU per call at ${rate} calls/s each (ListGroups a fifth of it), both at once; load average ${load()}\n`,
  );
  console.log(
    "| path | before us/call | after us/call | after/before, median [min..max] | failed |",
  );
  console.log("|---|---|---|---|---|");
  for (const r of rows) console.log(r);
} finally {
  for (const side of sides) await stop(side.proc);
  await issuer.stop();
  rmSync(tmp, { recursive: true, force: true });
}
