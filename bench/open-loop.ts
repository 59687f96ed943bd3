/**
 * An open-loop load generator: requests leave on a fixed schedule whatever the answers do, and
 * each latency is measured from the request's scheduled send time, not from when it actually
 * left. A server that stalls therefore shows the stall in every request scheduled during it
 * (no coordinated omission), which a closed loop or a per-connection rate budget hides.
 */
import * as hdr from "hdr-histogram-js";

/** What one open-loop run is asked to do. */
export interface OpenLoopLoad {
  /** Requests per second, spread uniformly (one every 1/rate s). */
  rate: number;
  /** How long to send, in seconds. */
  seconds: number;
  /** Send one request; resolves when its answer has been read, rejects on a failed call. */
  send: () => Promise<void>;
  /** How long to wait for the last answers after the schedule ends (default 10 s). */
  drainMs?: number;
  /**
   * Keep every request's times (bench/tails.ts): scheduled, actually sent and answered, in
   * `performance.now()` milliseconds of this process. `onTick` runs in the send loop, between
   * sends, with the current time (a sampler of /proc counters).
   */
  trace?: { onTick?: (now: number) => void };
  /**
   * How the sender waits for the next send time. "spin" (the default) turns the event loop
   * with setImmediate: sends leave on time, but the generator never leaves its core. "sleep"
   * blocks the thread (Atomics.wait, sub-millisecond) for at most 0.2 ms between turns, which
   * a real-time generator needs (bench/tails.ts --rt): the kernel stops a real-time thread
   * that never sleeps for 50 ms of every second. An answer then waits up to 0.2 ms to be
   * read, and the latencies include it (p50 about 0.45 ms higher).
   */
  pace?: "spin" | "sleep";
}

/** Every request's times, when `trace` was asked for. */
export interface OpenLoopTrace {
  scheduled: Float64Array;
  sent: Float64Array;
  done: Float64Array;
}

/** What one open-loop run measured; latencies in milliseconds from the scheduled send time. */
export interface OpenLoopResult {
  rate: number;
  sent: number;
  completed: number;
  errors: number;
  /** The first failure, to say why calls failed. */
  firstError?: unknown;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** Answers per second over the run (below `rate` when the server could not keep up). */
  achieved: number;
  trace?: OpenLoopTrace;
}

/** Run `load` open-loop and return its latency distribution, recorded in an HDR histogram. */
export async function openLoop(load: OpenLoopLoad): Promise<OpenLoopResult> {
  // Microseconds, 1 µs to 100 s, three significant digits.
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 100_000_000,
    numberOfSignificantValueDigits: 3,
  });
  const interval = 1000 / load.rate;
  const total = Math.max(1, Math.round(load.rate * load.seconds));
  let sent = 0;
  let completed = 0;
  let errors = 0;
  let firstError: unknown;
  let lastAnswer = 0;
  const trace: OpenLoopTrace | undefined = load.trace && {
    scheduled: new Float64Array(total),
    sent: new Float64Array(total),
    done: new Float64Array(total),
  };
  const onTick = load.trace?.onTick;
  const start = performance.now() + 5;
  const settle = (scheduled: number, i: number) => {
    lastAnswer = performance.now();
    if (trace) trace.done[i] = lastAnswer;
    histogram.recordValue(Math.max(1, Math.round((lastAnswer - scheduled) * 1000)));
    completed++;
  };
  const sleeper = load.pace === "sleep" ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
  await new Promise<void>((resolve) => {
    // setImmediate spins on the generator's own core; a timer would send in 1 ms bursts.
    const tick = () => {
      const now = performance.now();
      onTick?.(now);
      while (sent < total && start + sent * interval <= now) {
        const scheduled = start + sent * interval;
        const i = sent++;
        if (trace) {
          trace.scheduled[i] = scheduled;
          trace.sent[i] = performance.now();
        }
        load.send().then(
          () => settle(scheduled, i),
          (err: unknown) => {
            if (errors === 0) firstError = err;
            errors++;
            settle(scheduled, i);
          },
        );
      }
      if (sent >= total) return resolve();
      if (sleeper) {
        const wait = Math.min(start + sent * interval - performance.now(), 0.2);
        if (wait > 0.02) Atomics.wait(sleeper, 0, 0, wait);
      }
      setImmediate(tick);
    };
    tick();
  });
  const drainUntil = performance.now() + (load.drainMs ?? 10_000);
  while (completed < sent && performance.now() < drainUntil) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const ms = (us: number) => us / 1000;
  const result: OpenLoopResult = {
    rate: load.rate,
    sent,
    completed,
    errors,
    ...(errors > 0 ? { firstError } : {}),
    p50: ms(histogram.getValueAtPercentile(50)),
    p99: ms(histogram.getValueAtPercentile(99)),
    p999: ms(histogram.getValueAtPercentile(99.9)),
    max: ms(histogram.maxValue),
    achieved: completed / ((lastAnswer - start) / 1000),
    ...(trace ? { trace } : {}),
  };
  histogram.destroy();
  return result;
}
