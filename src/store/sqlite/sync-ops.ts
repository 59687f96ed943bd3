import type { Store } from "../store.js";

/**
 * SyncOps is the synchronous form of some Store operations, as an SQLite module implements
 * them: same arguments, plain result. sqlite-store.ts makes them async, refuses them after
 * close and turns driver errors into StoreErrors, in one place.
 */
export type SyncOps<K extends keyof Store> = {
  [P in K]: (...args: Parameters<Store[P]>) => Awaited<ReturnType<Store[P]>>;
};
