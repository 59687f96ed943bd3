/**
 * Preloaded into a benchmarked server (`node --import dist/bench/loop-probe.js`): measures the
 * event loop's delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution) and, on SIGUSR2,
 * writes its p50, p99 and max since the last signal (ms) as JSON to $GATEHOUSE_BENCH_LOOP_FILE
 * and starts over. bench/hostile.ts signals it at the start and end of each phase, so a
 * phase's figures are the server's own: how long a callback that was due waited to run.
 */
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const file = process.env.GATEHOUSE_BENCH_LOOP_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  process.on("SIGUSR2", () => {
    const ms = (ns: number) => ns / 1e6;
    writeFileSync(
      file,
      JSON.stringify({
        p50: ms(h.percentile(50)),
        p99: ms(h.percentile(99)),
        max: ms(h.max),
      }),
    );
    h.reset();
  });
}
