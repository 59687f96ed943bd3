/**
 * A CPU profile of one write path of a built checkout's guard server (bench/guard-server.ts):
 * the server started with `--cpu-prof` (and the Node flags it ships with), pinned to core 0
 * where taskset is present, 50 calls in flight for the given seconds after a warm-up, then
 * stopped so that V8 writes the profile. Prints the profile's path and the server's CPU
 * microseconds per call over the measured calls; summarize with bench/profile-summary.ts.
 *
 * `--no-prof`: no profiler (the CPU figures alone, user and system apart).
 *
 *   node dist/bench/write-profile.js <built checkout> <rest|connect> [seconds=8] [out dir]
 *     [--no-prof]
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { Agent } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startOidcIssuer } from "../test/helpers/oidc-issuer.js";
import { startGuardServer } from "./guard-process.js";
import { httpSender } from "./http-sender.js";
import { pinToCore1, processCpuMs, stop } from "./processes.js";
import { closedLoop } from "./setting-ab.js";

const [checkoutArg, pathArg, secondsArg, outArg] = process.argv
  .slice(2)
  .filter((a) => !a.startsWith("--"));
const profiling = !process.argv.includes("--no-prof");
if (!checkoutArg || !["rest", "connect"].includes(pathArg ?? "")) {
  console.error("usage: write-profile <built checkout> <rest|connect> [seconds] [out dir]");
  process.exit(2);
}
const checkout = resolve(checkoutArg);
const seconds = Number(secondsArg ?? 8);
const out = resolve(outArg ?? mkdtempSync(join(tmpdir(), "gatehouse-profile-")));
const hasTaskset = pinToCore1();

const issuer = await startOidcIssuer();
const tmp = mkdtempSync(join(tmpdir(), "gatehouse-wp-"));
const { proc, served } = await startGuardServer({
  checkout,
  db: join(tmp, "db"),
  issuerUrl: issuer.url,
  pin: hasTaskset,
  flags: profiling ? ["--cpu-prof", `--cpu-prof-dir=${out}`] : [],
});

let made = 0;
const name = () => `wp-${process.pid}-${made++}`;
const agent = new Agent({ keepAlive: true, maxSockets: 50 });
const send =
  pathArg === "rest"
    ? httpSender(agent, `http://127.0.0.1:${served.port}/iam/v2beta1/groups/${served.parent}`, {
        method: "POST",
        headers: { authorization: `Bearer ${served.token}`, "content-type": "application/json" },
        body: () => JSON.stringify({ name: name() }),
      })
    : httpSender(
        agent,
        `http://127.0.0.1:${served.port}/gatehouse.iam.v2beta1.GroupsService/CreateGroup`,
        {
          method: "POST",
          headers: { authorization: `Bearer ${served.token}`, "content-type": "application/json" },
          body: () => JSON.stringify({ parent: served.parent, group: { name: name() } }),
        },
      );

/** `send` with 50 calls in flight for `ms`; the number of calls answered. */
const load = (ms: number) => closedLoop(50, performance.now() + ms, send);

await load(2000); // warm-up: the JIT's first pass
// The server process is taskset's child when pinned; its CPU is read from the node process.
const pid = proc.pid!;
/** User and system CPU ticks of the server (/proc/<pid>/stat fields 14 and 15). */
const ticks = () => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(f[11]), sys: Number(f[12]) };
};
const t0 = ticks();
const cpu0 = processCpuMs(pid);
const calls = await load(seconds * 1000);
const perCall = ((processCpuMs(pid) - cpu0) * 1000) / calls;
const t1 = ticks();
// Clock ticks are 10 ms on Linux (USER_HZ 100).
const split = {
  userUs: Math.round(((t1.user - t0.user) * 10_000) / calls),
  sysUs: Math.round(((t1.sys - t0.sys) * 10_000) / calls),
};
agent.destroy();
await stop(proc);
await issuer.stop();
console.log(
  JSON.stringify({
    checkout,
    path: pathArg,
    calls,
    usPerCall: Math.round(perCall),
    ...split,
    load: loadavg()[0]!.toFixed(2),
    profiles: readdirSync(out).map((f) => join(out, f)),
  }),
);
