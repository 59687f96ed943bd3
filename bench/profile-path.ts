/**
 * `node dist/bench/profile-path.js <rest|connect|grpc> [seconds=8] [--list]`: one read path of
 * the guard's server (bench/guard-server.ts, its small dataset) under `node --cpu-prof`, with
 * 50 calls in flight from here (core 1) while the server runs on core 0. Prints the server's
 * CPU microseconds per call and the profile's file (data/bench/profiles/); summarize it with
 * `FROM_MS=<printed> node dist/bench/profile-summary.js <file>`, which leaves out the samples
 * before the load (the seeding and start-up). GetGroup by default, ListGroups with `--list`.
 */
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { startOidcIssuer } from "../test/helpers/oidc-issuer.js";
import { groupsServiceClient } from "./groups-proto.js";
import { startGuardServer } from "./guard-process.js";
import { httpSender } from "./http-sender.js";
import { pinToCore1, processCpuMs, stop } from "./processes.js";
import { closedLoop } from "./setting-ab.js";

const [which = "rest", secondsArg = "8"] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const list = process.argv.includes("--list");
const seconds = Number(secondsArg);
const hasTaskset = pinToCore1();
const dir = resolve("data/bench/profiles");
mkdirSync(dir, { recursive: true });
const before = new Set(readdirSync(dir));

const issuer = await startOidcIssuer();
const db = join(tmpdir(), `gatehouse-profile-${process.pid}.db`);
const spawned = performance.now();
const { proc, served } = await startGuardServer({
  checkout: resolve("."),
  db,
  issuerUrl: issuer.url,
  pin: hasTaskset,
  flags: ["--cpu-prof", `--cpu-prof-dir=${dir}`],
});

const auth = { authorization: `Bearer ${served.token}` };
const base = `http://127.0.0.1:${served.port}`;
const rpc = (m: string) => `${base}/gatehouse.iam.v2beta1.GroupsService/${m}`;
let run: (ms: number) => Promise<number>;
if (which === "grpc") {
  const Client = groupsServiceClient();
  const client = new Client(`127.0.0.1:${served.port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("authorization", auth.authorization);
  type Unary = (r: unknown, md: grpc.Metadata, cb: (e: Error | null) => void) => void;
  const call = (client as unknown as Record<string, Unary>)[list ? "listGroups" : "getGroup"]!.bind(
    client,
  );
  const request = list
    ? { uidp: { descendantsOf: served.org }, pageSize: 20 }
    : { uid: served.leaf };
  run = (ms) =>
    closedLoop(
      50,
      performance.now() + ms,
      () => new Promise<void>((ok, fail) => call(request, md, (e) => (e ? fail(e) : ok()))),
    );
} else {
  const agent = new Agent({ keepAlive: true, maxSockets: 50 });
  const send =
    which === "connect"
      ? httpSender(agent, rpc(list ? "ListGroups" : "GetGroup"), {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify(
            list ? { uidp: { descendantsOf: served.org }, pageSize: 20 } : { uid: served.leaf },
          ),
        })
      : httpSender(
          agent,
          list
            ? `${base}/iam/v2beta1/groups?${new URLSearchParams({ "uidp.descendantsOf": served.org, pageSize: "20" })}`
            : `${base}/iam/v2beta1/groups/${served.leaf}`,
          { headers: auth },
        );
  run = (ms) => closedLoop(50, performance.now() + ms, send);
}

await run(2000); // warm-up: the JIT compiles the path before the measured samples
const fromMs = performance.now() - spawned;
const cpu0 = processCpuMs(proc.pid!);
const calls = await run(seconds * 1000);
const usPerCall = ((processCpuMs(proc.pid!) - cpu0) * 1000) / calls;
await stop(proc);
await issuer.stop();
for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
const file = readdirSync(dir).find((f) => !before.has(f));
console.log(
  `${which} ${list ? "ListGroups" : "GetGroup"}: ${calls} calls in ${seconds} s, ${usPerCall.toFixed(0)} us server CPU per call`,
);
console.log(
  `FROM_MS=${Math.round(fromMs)} node dist/bench/profile-summary.js ${join(dir, file ?? "?")}`,
);
process.exit(0);
