import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { ClosureRow, StoreFixture } from "./store-suite.js";

/** An SQLite store as the store contract (store-suite.ts) sees it: its closure rows in view. */
export function sqliteFixture(store: SqliteStore): StoreFixture {
  return {
    store,
    closureRows: () =>
      store.db
        .prepare("SELECT ancestor, descendant, depth FROM group_closure_by_uid")
        .all() as ClosureRow[],
    dispose: () => store.close(),
  };
}
