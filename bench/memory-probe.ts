/**
 * Where a server's resident memory is, second by second: preloaded into it (`npm run bench --
 * "--server-flags=--max-semi-space-size=8 --import=./dist/bench/memory-probe.js"` with
 * MEMORY_PROBE_OUT=<file>), it appends one JSON line a second: RSS and its peak, the anonymous
 * and file-backed parts (/proc/self/smaps_rollup), and V8's view (heap committed and used,
 * external and ArrayBuffer bytes, each heap space's committed MB). The anonymous part less
 * V8's heap and external bytes is native memory: SQLite's caches, worker isolates, malloc.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

const out = process.env.MEMORY_PROBE_OUT;
if (out) {
  const t0 = performance.now();
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  const kbField = (text: string, key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  setInterval(() => {
    const m = process.memoryUsage();
    const status = readFileSync("/proc/self/status", "utf8");
    const rollup = readFileSync("/proc/self/smaps_rollup", "utf8");
    const anon = kbField(rollup, "Anonymous");
    const line = {
      s: Math.round((performance.now() - t0) / 1000),
      rssMB: kbField(status, "VmRSS") >> 10,
      hwmMB: kbField(status, "VmHWM") >> 10,
      anonMB: anon >> 10,
      fileMB: (kbField(rollup, "Rss") - anon) >> 10,
      heapTotalMB: mb(m.heapTotal),
      heapUsedMB: mb(m.heapUsed),
      externalMB: mb(m.external),
      arrayBuffersMB: mb(m.arrayBuffers),
      spacesMB: Object.fromEntries(
        getHeapSpaceStatistics().map((s) => [
          s.space_name.replace(/_space$/, ""),
          mb(s.space_size),
        ]),
      ),
    };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  }, 1000).unref();
}
