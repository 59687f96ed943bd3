import type { Database } from "better-sqlite3";
import { accessCacheBudget, type CacheCounts, createAnswerMap } from "../access-answers.js";

/**
 * A cache of query answers that is only ever used while the database is unchanged. Every
 * lookup first asks SQLite whether this connection wrote anything since the last one
 * (`total_changes()`), and the first lookup of each turn of the event loop also whether any
 * other connection did, such as a CLI command on the same file (`PRAGMA data_version`), and
 * empties the cache if so. A cached answer is therefore the one the query would give at that
 * moment, or, for another process's commit, the one it gave earlier in the same turn: a
 * removed binding still takes effect at once. The checks are tiny statements; the access
 * queries they spare are several times dearer.
 *
 * Answers are shared between callers, so they must be immutable (frozen, or read-only sets).
 */
export interface ReadCache {
  /** Wrap `query`, named `name`, so that its answers are cached under `key(...args)`. */
  memo<A extends unknown[], R>(
    name: string,
    query: (...args: A) => R,
    key: (...args: A) => string,
  ): (...args: A) => R;
  /**
   * Run `write`, a write on this connection that changes no cached answer (an identity's
   * lastSeenTime), without emptying the cache. Anything written before it still counts.
   */
  unseen<R>(write: () => R): R;
  /**
   * Forget every answer: after a rollback, whose undone writes moved no change counter back,
   * answers read inside the rolled-back transaction would otherwise outlive it.
   */
  clear(): void;
  /** Lookups answered from the cache and lookups that ran their query, so far. */
  readonly counts: Readonly<CacheCounts>;
}

/**
 * Create a read cache over `db`, holding at most `budget.maxBytes` of answers and
 * `budget.maxEntries` of them (oldest dropped first; access-answers.ts createAnswerMap).
 */
export function createReadCache(db: Database, budget = accessCacheBudget): ReadCache {
  // Two statements rather than one SELECT of both: with the table-valued pragma_data_version,
  // one call cost 0.89 us here, the two apart 0.63 us, and total_changes() alone (all that
  // `unseen` needs after its write) 0.29 us. Every access-neutral write pays `unseen`, and
  // every cached access answer `fresh`.
  const totalChanges = db.prepare("SELECT total_changes()").pluck();
  const pragmaDataVersion = db.prepare("PRAGMA data_version").pluck();
  let changes = -1;
  let dataVersion = -1;
  const entries = createAnswerMap(budget.maxBytes, budget.maxEntries);
  const counts: CacheCounts = { hits: 0, misses: 0 };
  // PRAGMA data_version opens a read transaction on the WAL: 5-6 us a call on a loaded
  // machine against 1-2 us for total_changes(), and two or three lookups a call asked it, 8% of
  // a Connect GetGroup (bench/RESULTS.md, issue 38). Another process's commit is seen from
  // the next turn of the event loop, which it could as well have committed just after.
  let versionSeen = false;
  const forgetVersion = () => {
    versionSeen = false;
  };

  const fresh = () => {
    const c = totalChanges.get() as number;
    let v = dataVersion;
    if (!versionSeen) {
      v = pragmaDataVersion.get() as number;
      versionSeen = true;
      setImmediate(forgetVersion).unref();
    }
    if (c !== changes || v !== dataVersion) {
      entries.clear();
      changes = c;
      dataVersion = v;
    }
  };

  return {
    counts,
    clear() {
      entries.clear();
    },
    unseen(write) {
      fresh();
      const result = write();
      // Only this connection's own count moved: other connections' writes still show in
      // data_version at the next lookup. A write that failed is not forgiven: its transaction
      // may have been rolled back with others' writes, so the next lookup starts afresh.
      changes = totalChanges.get() as number;
      return result;
    },
    memo(name, query, key) {
      const space = `${name}\u0000`;
      return (...args) => {
        fresh();
        const k = space + key(...args);
        if (entries.has(k)) {
          counts.hits++;
          return entries.get(k) as ReturnType<typeof query>;
        }
        counts.misses++;
        const answer = query(...args);
        entries.set(k, answer);
        return answer;
      };
    },
  };
}
