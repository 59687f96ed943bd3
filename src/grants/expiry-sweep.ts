import { setImmediate as nextTurn } from "node:timers/promises";
import { changeScope } from "../events/audit-scope.js";
import type { Store } from "../store/store.js";

/** The event type of a role binding that expired and was removed. */
export const bindingExpiredType = "dev.gatehouse.iam.role_binding.expired.v1";

/**
 * How often each server sweeps expired bindings away. An expired binding grants nothing from
 * its expiry on whether or not it is swept (the access answers compare expiries with the
 * clock); the sweep removes the row and records the `expired` event within this interval.
 */
export const expirySweepIntervalMs = 1000;

/** How many bindings one sweep reads at a time. */
const sweepBatchSize = 200;

/** The audit scope of one expiry (its subject: the binding). */
const expiryScope = () =>
  changeScope({
    type: bindingExpiredType,
    source: "role binding expiry",
    protocol: "upkeep",
    operator: "role binding expiry",
    // The store's expireRoleBinding reports `expired` when it deleted the binding.
    outcomeTypes: { expired: bindingExpiredType },
  });

/** What the sweep needs. */
export interface ExpirySweepDeps {
  store: Pick<Store, "expiredRoleBindings" | "expireRoleBinding" | "recording">;
  now: () => number;
  /** Told how many expired: a count, never who. */
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** The sweep of expired role bindings. */
export interface ExpirySweepJob {
  /** Remove the bindings expired at the clock's now; returns how many this run removed. */
  run(): Promise<number>;
}

/**
 * Create the sweep: each binding whose expiry has passed is deleted in a transaction of its
 * own that records its `expired` event beside the delete. Replicas sweep at once without
 * harm: the delete decides (the store's expireRoleBinding), so each expiry is recorded once,
 * by whichever replica deleted the row.
 */
export function createExpirySweep(deps: ExpirySweepDeps): ExpirySweepJob {
  const { store, now, log } = deps;
  return {
    async run() {
      const at = now();
      let removed = 0;
      for (;;) {
        const due = await store.expiredRoleBindings(at, sweepBatchSize);
        for (const uid of due) {
          const done = await store.recording(expiryScope()).expireRoleBinding(uid, at);
          if (done.kind === "expired") removed++;
        }
        if (due.length < sweepBatchSize) break;
        // Writers queued behind this batch go first.
        await nextTurn();
      }
      if (removed > 0) log({ removed }, "expired role bindings removed");
      return removed;
    },
  };
}
