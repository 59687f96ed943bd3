/** A background job run on a timer: the sign-in purge, the event retention. */
export interface PeriodicJob {
  run(): Promise<unknown>;
}

/**
 * Run `job` every `intervalMs`, one run at a time (a run still going when the next is due
 * skips that turn); the timer never keeps the process alive. Returns the stop.
 */
export function startPeriodic(
  job: PeriodicJob,
  intervalMs: number,
  onError: (err: unknown) => void,
): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    job
      .run()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
