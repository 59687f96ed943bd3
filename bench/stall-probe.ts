/**
 * What stops a Node process from running, recorded for bench/tails.ts: garbage collections
 * (PerformanceObserver 'gc' entries), event-loop gaps (a 1 ms interval that fired late) and,
 * at the end, each thread's CPU and run-queue wait from /proc (schedstat). In the load
 * generator it is started by `startProbe()`; in a server child it is preloaded with
 * `node --import ./dist/bench/stall-probe.js`, and writes its record as JSON to the file named
 * by STALL_PROBE_OUT when the process exits. Times are absolute (`performance.timeOrigin` +
 * `performance.now()`, in ms), so that two processes' records line up.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";

export interface ThreadStat {
  tid: number;
  name: string;
  /** Milliseconds on a CPU, and runnable but waiting for one, since the thread started. */
  cpuMs: number;
  waitMs: number;
  /** Voluntary and involuntary context switches. */
  switches: number;
}

export interface ProbeRecord {
  pid: number;
  /** [start, duration ms, V8 kind (1 scavenge, 2 minor mark-sweep, 4 mark-compact, 8 incremental, 16 weak callbacks)] */
  gc: [number, number, number][];
  /**
   * [last tick, late tick, ms of CPU the main thread had in between]: the intervals in which a
   * 1 ms timer fired over 2 ms late. A gap spent on the CPU is our own work (a long task, a
   * GC); a gap off it is the thread waiting (for a core, or a blocking call).
   */
  gaps: [number, number, number][];
  threads: ThreadStat[];
}

const abs = (t: number) => performance.timeOrigin + t;

/** Read /proc/<pid>/task/<tid>/schedstat: [on-CPU ms, run-queue wait ms]. */
export function schedstat(pid: number, tid = pid): [number, number] {
  const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ");
  return [Number(cpu) / 1e6, Number(wait) / 1e6];
}

/** Every thread of `pid` with its totals. */
export function threadStats(pid: number): ThreadStat[] {
  const out: ThreadStat[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const tid = Number(t);
    try {
      const [cpuMs, waitMs] = schedstat(pid, tid);
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
      const n = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      out.push({
        tid,
        name,
        cpuMs,
        waitMs,
        switches: n("voluntary_ctxt_switches") + n("nonvoluntary_ctxt_switches"),
      });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** Start recording in this process; `stop()` returns what was recorded. */
export function startProbe(): { stop: () => ProbeRecord; record: ProbeRecord } {
  const record: ProbeRecord = { pid: process.pid, gc: [], gaps: [], threads: [] };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind ?? 0;
      record.gc.push([abs(e.startTime), e.duration, kind]);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  const cpu = () => {
    const u = process.threadCpuUsage();
    return (u.user + u.system) / 1000;
  };
  let last = performance.now();
  let lastCpu = cpu();
  const timer = setInterval(() => {
    const now = performance.now();
    const c = cpu();
    if (now - last > 2) record.gaps.push([abs(last), abs(now), c - lastCpu]);
    last = now;
    lastCpu = c;
  }, 1);
  timer.unref();
  return {
    record,
    stop() {
      observer.disconnect();
      clearInterval(timer);
      record.threads = threadStats(process.pid);
      return record;
    },
  };
}

const out = process.env.STALL_PROBE_OUT;
// Preloaded in a child whose environment names the output file (never set in the generator).
if (out) {
  const probe = startProbe();
  process.once("exit", () => writeFileSync(out, JSON.stringify(probe.stop())));
}
