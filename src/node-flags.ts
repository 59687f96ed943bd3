/**
 * The Node.js flags the server is meant to run with: `npm start`, the Dockerfile and the
 * benchmark use these (test/docs/node-flags.test.ts keeps them in step), and the README tells
 * anyone starting `node bin/gatehouse.js serve` by hand to pass them too. Flags for V8's heap
 * must be given on the command line: they are read when the heap is made, before any of our
 * code runs.
 *
 * `--max-semi-space-size=8`: a young generation of 2 x 8 MB instead of V8's default growth to
 * 2 x 32 MB on a machine with memory to spare. Almost nothing of a call outlives a scavenge
 * (16 bytes of a REST GetGroup), so smaller semi-spaces cost no throughput (REST 12.7k
 * against 13.3k req/s, gRPC on the grpc-js port then 7.9k against 7.4k, same run) and take about 100 MB off the
 * server's peak (bench/RESULTS.md, "Memory").
 *
 * `--heap-growing-percent=100`: after a full collection V8 lets the old generation grow to 2x
 * what survived before the next one, instead of a factor of its own choosing (up to 4x on a
 * loaded machine, where its collections look slow). What a call leaves in the old generation
 * is garbage (caches are capped in bytes): through the full benchmark 40-55 MB survived each
 * full collection while the old generation grew to 117 MB between them, most of the server's
 * peak. With the flag it stayed under 67 MB and the peak RSS went from 285 to 232 MB (with
 * serverEnvironment below). At 50 (1.5x) the peak was 191 MB, but a lean gRPC GetGroup cost
 * 1.05x [0.98..1.15] the server CPU of the same build without it, served at once
 * (bench/pair.ts); at 100, 1.02x [0.95..1.30] (bench/RESULTS.md, issue 38 round five).
 */
export const serverNodeFlags: readonly string[] = [
  "--max-semi-space-size=8",
  "--heap-growing-percent=100",
];

/**
 * What `gatehouse serve` adds to its flags when it may run on one CPU only (pinned with
 * taskset, or given one CPU by a container's cgroup limit: Node's availableParallelism reads
 * both): it restarts itself with them at once (bin/gatehouse.js, process.execve: same process,
 * same pid), before anything else is loaded.
 *
 * `--single-threaded-gc`: V8 collects on the main thread alone, with no helper threads for
 * scavenging, marking and sweeping. On one CPU those helpers cannot run beside the main thread:
 * they take its CPU from it in the middle of its work, and a collection waits for them. Under
 * hostile clients on one pinned core (bench/hostile.ts, two full runs each way, same hour), the
 * server's main thread waited for its core 20-21% of the time with helpers and 4% without;
 * the longest collection pauses went from 15-22 ms to 6-11 ms (one of 26 ms), and the
 * control client's p99 against its unloaded p99 went from 5.8x and 3.7x to 2.3x and 1.8x
 * under a pipelined flood, and from 3.2x and 4.0x to 2.0x and 1.0x under a console-file flood
 * (bench/RESULTS.md, round 8). With more than one CPU the helpers run beside the main thread
 * and shorten its pauses: nothing is added there.
 */
export const oneCpuNodeFlags: readonly string[] = ["--single-threaded-gc"];

/**
 * The flags `gatehouse serve` restarts itself with: oneCpuNodeFlags when it may run on `cpus`
 * CPUs (os.availableParallelism) and its `execArgv` does not already say how V8 should collect
 * (`--single-threaded-gc`, or `--no-single-threaded-gc` to keep the helper threads); otherwise
 * none, and it does not restart.
 */
export function oneCpuRestartFlags(cpus: number, execArgv: readonly string[]): string[] {
  if (cpus > 1) return [];
  if (execArgv.some((a) => /^--(no-)?single[-_]threaded[-_]gc$/.test(a))) return [];
  return [...oneCpuNodeFlags];
}

/**
 * The environment the server is meant to start with, beside its flags (the same places pass
 * it: `npm start`, the Dockerfile, the benchmark; test/docs/node-flags.test.ts).
 *
 * `MALLOC_ARENA_MAX=2`: glibc's malloc keeps up to eight arenas a core, one for each thread
 * that allocated at once (the main thread, V8's GC and compiler threads, libuv's pool, the WAL
 * checkpointer's worker), and returns little of what is freed in them. Through the full
 * benchmark the server's native memory (RSS less V8's heap) grew from 50 to 130 MB, section
 * by section, and its peak RSS reached 297 MB; with two arenas it stayed at 35-60 MB and the
 * peak at 237 MB, the same run's CPU per call unchanged (bench/RESULTS.md, issue 38 round
 * five). Read by glibc when the process starts: it cannot be set from inside. Other C
 * libraries (musl) ignore it.
 */
export const serverEnvironment: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };
