/**
 * Preloaded into a benchmarked server (`node --import dist/bench/loop-probe.js`): measures the
 * event loop's delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution) and, on SIGUSR2,
 * writes its p50, p99 and max since the last signal (ms) as JSON to $GATEHOUSE_BENCH_LOOP_FILE
 * and starts over. bench/hostile.ts signals it at the start and end of each phase, so a
 * phase's figures are the server's own: how long a callback that was due waited to run.
 * Beside them, the garbage collector's pauses since the last signal (perf_hooks 'gc' entries:
 * how many, their total and the longest, ms of wall time): what the server's own allocation
 * costs the others, a control call landing on a pause waiting for all of it (bench/RESULTS.md,
 * "Fair service under hostile clients", round 5).
 */
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

const file = process.env.GATEHOUSE_BENCH_LOOP_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let gc = { count: 0, ms: 0, max: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.ms += e.duration;
      gc.max = Math.max(gc.max, e.duration);
    }
  }).observe({ entryTypes: ["gc"] });
  process.on("SIGUSR2", () => {
    const ms = (ns: number) => ns / 1e6;
    writeFileSync(
      file,
      JSON.stringify({
        p50: ms(h.percentile(50)),
        p99: ms(h.percentile(99)),
        max: ms(h.max),
        gc,
      }),
    );
    h.reset();
    gc = { count: 0, ms: 0, max: 0 };
  });
}
