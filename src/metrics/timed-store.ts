import type { Store } from "../store/store.js";
import type { Metrics } from "./metrics.js";

/** The operations of a store: its method names, the `operation` label's only values. */
export function storeOperations(store: Store): string[] {
  return Object.keys(store).filter(
    (k) =>
      k !== "accessCacheCounts" &&
      typeof (store as unknown as Record<string, unknown>)[k] === "function",
  );
}

/**
 * A store whose every operation reports its latency to `metrics` (transactions' inner
 * operations too). Built once at start-up: each method is wrapped once, and a call costs two
 * clock reads and one histogram observation. Only used when metrics are on.
 */
export function timedStore(store: Store, metrics: Metrics): Store {
  const out = Object.create(store) as Record<string, unknown>;
  const source = store as unknown as Record<string, unknown>;
  for (const name of storeOperations(store)) {
    const op = source[name] as (...args: unknown[]) => unknown;
    if (name === "atomically") {
      // The transaction's own store is timed too; its wrapper is made per transaction.
      out[name] = (fn: (tx: Store) => Promise<unknown>) => {
        const started = performance.now();
        const done = () => metrics.storeOperation(name, (performance.now() - started) / 1000);
        const result = store.atomically((tx) => fn(timedStore(tx, metrics)));
        result.then(done, done);
        return result;
      };
      continue;
    }
    out[name] = (...args: unknown[]) => {
      const started = performance.now();
      const result = op.apply(store, args);
      if (result instanceof Promise) {
        const done = () => metrics.storeOperation(name, (performance.now() - started) / 1000);
        result.then(done, done);
      } else {
        metrics.storeOperation(name, (performance.now() - started) / 1000);
      }
      return result;
    };
  }
  return out as unknown as Store;
}
