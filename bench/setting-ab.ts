/**
 * A/B benchmarks of a setting on a shared machine (bench/ab.ts compares two checkouts): two
 * Gatehouse processes (bench/ab-server.ts) that differ
 * in one setting, measured in alternating rounds (A B, B A, A B...) so that the machine's
 * drift falls on both, from this process (the load generator). Each round gives a rate and
 * the server's CPU time per call (/proc, the server process alone); the figures are medians
 * over the rounds and the median of each pair's ratio. CPU per call is the steadier figure
 * under contention: other processes' load stretches a round's wall time (its rate), much less
 * the CPU a call takes.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { serverNodeFlags } from "../src/node-flags.js";
import { stop } from "./processes.js";

/** User and system CPU time of process `pid`, every thread, in ms (/proc; 10 ms ticks). */
function cpuOf(pid: number): { user: number; sys: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: Number(f[11]) * 10, sys: Number(f[12]) * 10 };
  } catch {
    return { user: 0, sys: 0 };
  }
}

/** What an ab-server prints once ready. */
export interface AbTarget {
  port: number;
  metricsPort: number;
  org: string;
  group: string;
  token: string;
  pid: number;
}

/** One side: its name and ab-server's settings. */
export interface AbSide {
  name: string;
  events: "on" | "off";
  metrics: "on" | "off";
  /** A webhook sink URL: the side's organization subscribes to group creations there. */
  sink?: string;
  /** More settings (`GATEHOUSE_*` to value) for this side's server. */
  settings?: Record<string, string>;
}

/** One round's load: run calls against `target` until `until` (performance.now()); the count. */
export type AbLoad = (target: AbTarget, until: number) => Promise<number>;

/** The figures of one load on both sides. */
export interface AbFigures {
  rate: { a: number; b: number; ratio: number; ratios: number[] };
  cpuPerCallMs: { a: number; b: number; ratio: number };
  /** The system (kernel) part of cpuPerCallMs: writes, fsyncs, sockets. */
  sysPerCallMs: { a: number; b: number };
}

const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" });
    return cpus().length > 1;
  } catch {
    return false;
  }
})();

/** Start both sides (servers on core 0, this generator on core 1, where taskset exists). */
export async function startAb(a: AbSide, b: AbSide) {
  if (hasTaskset) execFileSync("taskset", ["-pc", "1", String(process.pid)]);
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-ab-bench-"));
  const script = fileURLToPath(new URL("./ab-server.js", import.meta.url));
  const children: ChildProcess[] = [];
  const start = async (side: AbSide): Promise<AbTarget> => {
    const cmd = [
      process.execPath,
      ...serverNodeFlags,
      // AB_PROFILE=<dir>: each server writes a CPU profile there when it stops.
      ...(process.env.AB_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.AB_PROFILE}`] : []),
      script,
      join(dir, `${side.name}.db`),
      side.events,
      side.metrics,
      ...(side.sink ? [side.sink] : []),
    ];
    const env = { ...process.env, AB_SETTINGS: JSON.stringify(side.settings ?? {}) };
    const child = hasTaskset
      ? spawn("taskset", ["-c", "0", ...cmd], { stdio: ["ignore", "pipe", "inherit"], env })
      : spawn(cmd[0]!, cmd.slice(1), { stdio: ["ignore", "pipe", "inherit"], env });
    children.push(child);
    const lines = createInterface({ input: child.stdout! });
    for await (const line of lines) {
      return { ...(JSON.parse(line) as Omit<AbTarget, "pid">), pid: child.pid! };
    }
    throw new Error(`${side.name}: the server exited before it was ready`);
  };
  const targets = { a: await start(a), b: await start(b) };
  return {
    ...targets,
    async close() {
      await Promise.all(children.map(stop));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * Measure `load` on both sides: a warm-up round each, then `pairs` pairs of rounds of
 * `seconds`, the order swapped every pair.
 */
export async function measureAb(
  targets: { a: AbTarget; b: AbTarget },
  load: AbLoad,
  opts: { seconds: number; pairs: number },
): Promise<AbFigures> {
  const round = async (t: AbTarget) => {
    const cpu0 = cpuOf(t.pid);
    const t0 = performance.now();
    const n = await load(t, t0 + opts.seconds * 1000);
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = cpuOf(t.pid);
    const sys = cpu1.sys - cpu0.sys;
    return { rate: n / wall, cpuPerCall: (cpu1.user - cpu0.user + sys) / n, sysPerCall: sys / n };
  };
  await round(targets.a);
  await round(targets.b);
  const a: { rate: number; cpuPerCall: number; sysPerCall: number }[] = [];
  const b: typeof a = [];
  for (let i = 0; i < opts.pairs; i++) {
    if (i % 2 === 0) {
      a.push(await round(targets.a));
      b.push(await round(targets.b));
    } else {
      b.push(await round(targets.b));
      a.push(await round(targets.a));
    }
  }
  const ratios = a.map((x, i) => x.rate / b[i]!.rate);
  const cpuA = median(a.map((x) => x.cpuPerCall));
  const cpuB = median(b.map((x) => x.cpuPerCall));
  return {
    rate: {
      a: median(a.map((x) => x.rate)),
      b: median(b.map((x) => x.rate)),
      ratio: median(ratios),
      ratios,
    },
    cpuPerCallMs: { a: cpuA, b: cpuB, ratio: cpuA / cpuB },
    sysPerCallMs: { a: median(a.map((x) => x.sysPerCall)), b: median(b.map((x) => x.sysPerCall)) },
  };
}

/** Run `calls` workers, each calling `call` until `until`; the number of calls made. */
export async function closedLoop(
  inFlight: number,
  until: number,
  call: () => Promise<unknown>,
): Promise<number> {
  let done = 0;
  const worker = async () => {
    while (performance.now() < until) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return done;
}

/** Print one load's figures; `a` and `b` name the sides. */
export function printAb(label: string, f: AbFigures, a: string, b: string): void {
  const r = (x: number) => x.toFixed(0);
  const spread = `${Math.min(...f.rate.ratios).toFixed(2)}-${Math.max(...f.rate.ratios).toFixed(2)}`;
  console.log(`${label}:`);
  console.log(`  rate, median:           ${a} ${r(f.rate.a)}/s, ${b} ${r(f.rate.b)}/s`);
  console.log(`  rate ${a}/${b}, median of pairs: ${f.rate.ratio.toFixed(3)} (pairs ${spread})`);
  console.log(
    `  server CPU per call:    ${a} ${us(f.cpuPerCallMs.a)}, ${b} ${us(f.cpuPerCallMs.b)}: ${a}/${b} ${f.cpuPerCallMs.ratio.toFixed(3)}`,
  );
  console.log(
    `    of which system:      ${a} ${us(f.sysPerCallMs.a)}, ${b} ${us(f.sysPerCallMs.b)}`,
  );
}

const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;

/** The machine's load, to print beside the figures (a shared machine's noise). */
export function loadNote(): string {
  return `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${cpus().length} cores`;
}
