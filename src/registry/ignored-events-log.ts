/**
 * Create the log of ignored registry events: one line per reason and repository per window,
 * however many events a registry sends for it, with the number left unlogged since. A
 * notification flood for unknown repos once wrote 127 MB of log in 20 s (issue 36, item 5).
 * At most `maxKeys` reasons and repositories are told apart in a window; past that, one line
 * says that more were not logged.
 */
export function createIgnoredEventsLog(opts: {
  log(fields: Record<string, unknown>, msg: string): void;
  now: () => number;
  /** Default one minute. */
  windowMs?: number;
  /** Default 256. */
  maxKeys?: number;
}) {
  const windowMs = opts.windowMs ?? 60_000;
  const maxKeys = opts.maxKeys ?? 256;
  // Per reason and repository: when it was last logged, and how many were not logged since.
  const seen = new Map<string, { at: number; unlogged: number }>();
  let overflowAt = Number.NEGATIVE_INFINITY;
  let overflowUnlogged = 0;

  const prune = (now: number) => {
    for (const [key, entry] of seen) {
      if (now - entry.at >= windowMs) seen.delete(key);
    }
  };

  return {
    /** Log that an event for `repository` was ignored for `reason`, unless it was just now. */
    ignored(reason: string, repository: string, fields: Record<string, unknown>): void {
      const now = opts.now();
      const key = `${reason}\n${repository}`;
      const entry = seen.get(key);
      if (entry && now - entry.at < windowMs) {
        entry.unlogged++;
        return;
      }
      if (!entry && seen.size >= maxKeys) {
        prune(now);
        if (seen.size >= maxKeys) {
          if (now - overflowAt < windowMs) {
            overflowUnlogged++;
            return;
          }
          opts.log(
            { unlogged: overflowUnlogged, windowSeconds: windowMs / 1000 },
            `registry events ignored for more than ${maxKeys} repositories; more are not logged this window`,
          );
          overflowAt = now;
          overflowUnlogged = 0;
          return;
        }
      }
      const unlogged = entry?.unlogged ?? 0;
      seen.delete(key);
      seen.set(key, { at: now, unlogged: 0 });
      opts.log(
        { ...fields, repository: repository.slice(0, 300), ...(unlogged > 0 ? { unlogged } : {}) },
        `registry event ignored: ${reason}`,
      );
    },
  };
}

/** The log of ignored registry events. */
export type IgnoredEventsLog = ReturnType<typeof createIgnoredEventsLog>;
