import type { AuditScope } from "../events/audit-scope.js";
import type { Store } from "../store/store.js";
import type { Metrics } from "./metrics.js";

/** The operations of a store: its method names, the `operation` label's only values. */
export function storeOperations(store: Store): string[] {
  return Object.keys(store).filter(
    (k) =>
      k !== "accessCacheCounts" &&
      k !== "recording" &&
      typeof (store as unknown as Record<string, unknown>)[k] === "function",
  );
}

/** A timed view of a store: its timed methods on a prototype, the store in `inner`. */
interface Timed {
  readonly inner: Store;
}

/**
 * A store whose every operation reports its latency to `metrics` (transactions' inner
 * operations too). The wrappers are made once, at start-up, on a prototype that reads the
 * store it times from `inner`: a transaction's store is timed by one object made on that
 * prototype, not by wrapping each of its methods again. A call costs two clock reads and one
 * histogram observation. Only used when metrics are on.
 */
export function timedStore(store: Store, metrics: Metrics): Store {
  const proto: Record<string, unknown> = {};
  const view = (inner: Store): Store =>
    Object.assign(Object.create(proto) as Timed, { inner }) as unknown as Store;
  for (const name of storeOperations(store)) {
    if (name === "atomically") {
      // The transaction's own store is timed too, through the same prototype.
      proto[name] = function (this: Timed, fn: (tx: Store) => Promise<unknown>) {
        const started = performance.now();
        const done = () => metrics.storeOperation(name, (performance.now() - started) / 1000);
        const result = this.inner.atomically((tx) => fn(view(tx)));
        result.then(done, done);
        return result;
      };
      continue;
    }
    proto[name] = function (this: Timed, ...args: unknown[]) {
      const started = performance.now();
      const op = (this.inner as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!;
      const result = op.apply(this.inner, args);
      if (result instanceof Promise) {
        const done = () => metrics.storeOperation(name, (performance.now() - started) / 1000);
        result.then(done, done);
      } else {
        metrics.storeOperation(name, (performance.now() - started) / 1000);
      }
      return result;
    };
  }
  // A call's view (Store.recording) is timed through the same prototype.
  proto.recording = function (this: Timed, scope: AuditScope) {
    return view(this.inner.recording(scope));
  };
  // What is not an operation (accessCacheCounts, a backend's `db`) reads through to the store.
  Object.setPrototypeOf(proto, store);
  return view(store);
}
