/**
 * What survives the young generation under load, by allocation site: preloaded into a server
 * (`node --import ./dist/bench/heap-probe.js`, HEAP_PROBE_OUT=<file>), it samples allocations
 * (the V8 sampling heap profiler, one sample every 32 kB) and, right after the first scavenge
 * once the process has run HEAP_PROBE_AFTER_MS (default 5000), writes the samples still alive: a scavenge has just removed the young
 * garbage, so what is left is the live heap plus what was promoted and has not been collected
 * by a mark-compact yet, and (includeObjectsCollectedByMajorGC) what mark-compacts collected
 * since the start: the allocations that lived past a scavenge and died old. The file has the .heapprofile format (Chrome DevTools opens it).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { PerformanceObserver } from "node:perf_hooks";

const out = process.env.HEAP_PROBE_OUT;
if (out) {
  const session = new Session();
  session.connect();
  // Keep the samples of objects that a mark-compact collected: the promoted garbage.
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 32768,
    includeObjectsCollectedByMajorGC: true,
  });
  const after = Number(process.env.HEAP_PROBE_AFTER_MS ?? 5000);
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === 1 && performance.now() > after) {
        observer.disconnect();
        void session.post("HeapProfiler.getSamplingProfile").then(({ profile }) => {
          writeFileSync(out, JSON.stringify(profile));
          return session.post("HeapProfiler.stopSampling");
        });
      }
    }
  });
  observer.observe({ entryTypes: ["gc"] });
}
