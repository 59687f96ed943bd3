/**
 * What the server ran while the slowest control calls waited: bench/hostile.ts `--profile=<dir>`
 * leaves the server's .cpuprofile and control-calls.json (each call's start and end on the
 * monotonic clock, as the profile's samples are) in `dir`. For the calls of `phase` slower than
 * the `quantile` (default 0.95) of that phase, this prints the share of their time the server
 * was idle, in GC, or in each function (self time; a sample is the wall time before it, so a
 * main thread waiting for its core shows as whatever it was running then).
 * `node dist/bench/profile-waits.js <dir> <phase> [quantile] [top=20]`
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { frameLabel, readProfile } from "./cpu-profile.js";

const [dir, phase, quantileArg, topArg] = process.argv.slice(2);
if (!dir || !phase) {
  console.error("usage: profile-waits <dir> <phase> [quantile=0.95] [top=20]");
  process.exit(2);
}
const quantile = Number(quantileArg ?? 0.95);
const top = Number(topArg ?? 20);
// The main thread's profile (node numbers a process's profiles in the order its threads started).
const file = readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .sort()[0];
if (!file) throw new Error(`no .cpuprofile in ${dir}`);
const profile = readProfile(join(dir, file)) as ReturnType<typeof readProfile> & {
  startTime: number;
};
const calls = (
  JSON.parse(readFileSync(join(dir, "control-calls.json"), "utf8")) as {
    phase: string;
    from: number;
    to: number;
    clientWaitUs?: number;
  }[]
).filter((c) => c.phase === phase);
if (calls.length === 0) throw new Error(`no control calls in phase ${phase}`);
const byLength = [...calls].sort((a, b) => b.to - b.from - (a.to - a.from));
const slow = byLength.slice(0, Math.max(1, Math.round(calls.length * (1 - quantile))));
const shortest = slow.at(-1)!.to - slow.at(-1)!.from;
slow.sort((a, b) => a.from - b.from);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
let t = profile.startTime;
let i = 0;
profile.samples.forEach((id, k) => {
  t += profile.timeDeltas[k] ?? 0;
  // The calls are sorted by start and do not overlap (one at a time).
  while (i < slow.length && slow[i]!.to < t) i++;
  const call = slow[i];
  if (!call || t < call.from) return;
  const dt = profile.timeDeltas[k] ?? 0;
  const label = frameLabel(byId.get(id)!);
  self.set(label, (self.get(label) ?? 0) + dt);
  total += dt;
});
const ms = (us: number) => (us / 1000).toFixed(1);
const inAll = slow.reduce((a, c) => a + c.to - c.from, 0);
const clientWait = slow.reduce((a, c) => a + (c.clientWaitUs ?? 0), 0);
console.log(
  `${phase}: ${slow.length} slowest of ${calls.length} calls (${ms(inAll)} ms in all, ${ms(shortest)}-${ms(byLength[0]!.to - byLength[0]!.from)} ms each); the control client waited for its core ${ms(clientWait)} ms of them (${((100 * clientWait) / inAll).toFixed(0)}%); ${ms(total)} ms of server profile samples in them:`,
);
for (const [label, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(
    `${((100 * us) / total).toFixed(1).padStart(5)}%  ${ms(us).padStart(7)} ms  ${label}`,
  );
}
