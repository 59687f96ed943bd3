import { setImmediate as nextTurn } from "node:timers/promises";
import type { Store } from "../store/store.js";

/** How many events one prune transaction deletes at most. */
export const pruneBatchSize = 1000;

/** How often the server prunes the audit trail. */
export const pruneIntervalMs = 10 * 60_000;

/** What the retention job needs. */
export interface EventRetentionDeps {
  store: Pick<Store, "pruneEvents">;
  now: () => number;
  /** How long an event is kept (GATEHOUSE_EVENT_RETENTION), in milliseconds. */
  retentionMs: number;
  /** Events per transaction; default pruneBatchSize. */
  batchSize?: number;
  /** Told what was pruned: a count and the cutoff, never an event's content. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** The retention of the audit trail. */
export interface EventRetentionJob {
  /** Delete the events older than the retention at the clock's now; returns how many went. */
  run(): Promise<number>;
}

/**
 * Create the retention job: the events older than `retentionMs` are deleted in batches of
 * `batchSize`, one short transaction each, with a turn of the event loop between them, so
 * that a large backlog (a first prune, a shortened retention) never holds the writers up for
 * longer than one batch. The cutoff is taken once per run: what ages meanwhile waits for the
 * next. Replicas may run it at once: each batch deletes what is still there.
 */
export function createEventRetention(deps: EventRetentionDeps): EventRetentionJob {
  const { store, now, retentionMs, log } = deps;
  const batchSize = deps.batchSize ?? pruneBatchSize;
  return {
    async run() {
      const before = now() - retentionMs;
      let pruned = 0;
      for (;;) {
        const n = await store.pruneEvents(before, batchSize);
        pruned += n;
        if (n < batchSize) break;
        // Writers queued behind this batch go first.
        await nextTurn();
      }
      if (pruned > 0) log({ pruned, before: new Date(before).toISOString() }, "events pruned");
      return pruned;
    },
  };
}
