import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Sqlite, { type Database } from "better-sqlite3";
import { type AuditScope, eventFor } from "../../events/audit-scope.js";
import { priorReadOf } from "../../events/change-data.js";
import { callView, scopeOf } from "../call-view.js";
import { behaviourOf, createSharedOps, isAuditedWrite } from "../ops/all.js";
import { appendEvent } from "../ops/events.js";
import type { Steps } from "../ops/operation.js";
import { seedBuiltins } from "../ops/roles.js";
import { type Store, StoreError, type StoreRoles } from "../store.js";
import { createAccessOps } from "./access.js";
import { type Checkpointer, fallbackCheckpointPages, startCheckpointer } from "./checkpointer.js";
import { fromSqliteError } from "./from-sqlite-error.js";
import { createGroupCommit, type GroupCommit } from "./group-commit.js";
import { createGroupOps } from "./groups.js";
import { migrate } from "./migrations.js";
import { createReadCache } from "./read-cache.js";
import { createSyncRunner } from "./run-sync.js";
import type { SyncOps } from "./sync-ops.js";

/** Options of createSqliteStore. */
export interface SqliteStoreOptions {
  /** The built-in roles to seed and the owner role to protect (the server's catalog). */
  roles: StoreRoles;
  /** How long a write waits for another connection's lock before `unavailable`; default 5000. */
  busyTimeoutMs?: number;
  /** PRAGMA synchronous; default FULL (every commit reaches the disk before it returns). */
  synchronous?: "FULL" | "NORMAL";
  /**
   * The clock, for the create time of built-in roles seeded at open and for role binding
   * expiry in access answers; default Date.now.
   */
  now?: () => number;
  /**
   * Checkpoint the WAL from a worker thread (checkpointer.ts) instead of inside the commit
   * that fills it, for a file database. The server turns it on; default off.
   */
  backgroundCheckpoints?: { onError?: (err: Error) => void };
}

/** SqliteStore is a Store with its connection in view, for tests and diagnostics only. */
export interface SqliteStore extends Store {
  readonly db: Database;
}

type DataOps = SyncOps<
  Exclude<keyof Store, "ping" | "close" | "atomically" | "recording" | "accessCacheCounts">
>;

/** How long readiness reports a full disk after a write was refused for lack of space. */
const fullForMs = 30_000;

/**
 * Create a Store backed by an SQLite file (":memory:" for a private in-memory database),
 * creating the file's directory if missing and bringing the schema up to date.
 *
 * better-sqlite3 is synchronous, so each operation runs start to end, as one transaction
 * where it has several statements, with no await in between.
 */
export function createSqliteStore(path: string, opts: SqliteStoreOptions): SqliteStore {
  const db = openMigrated(path, opts);
  const readCache = createReadCache(db);
  const groups = createGroupOps(db);
  // The operations written once for both backends (ops/), run synchronously.
  const runner = createSyncRunner(db, { createGroup: groups.createGroup });
  const shared = runner.bind(createSharedOps(opts.roles));
  // Built-in roles are rows like custom ones, upserted from the catalog at every open.
  runner.bind({ seedBuiltins }).seedBuiltins(opts.roles.builtins, (opts.now ?? Date.now)());
  // Each concept adds its operations here; the compiler checks that together they are a Store.
  const ops: DataOps = {
    ...groups,
    ...shared,
    // The access queries, identityExists among them, answered through the read cache.
    ...createAccessOps(readCache, shared, opts.now ?? Date.now),
  };
  // Writes no access answer depends on (the answers come from identities, roles and bindings
  // alone: the operation's accessNeutral) leave the read cache warm: under a steady stream of
  // group creates or tag pushes, every caller's next call would otherwise recompute its
  // access. A binding written beside them (a new organization is a group and a binding) or by
  // anyone else still empties it.
  for (const [name, op] of Object.entries(ops) as [string, (...args: unknown[]) => unknown][]) {
    if (!behaviourOf(name).accessNeutral) continue;
    (ops as Record<string, unknown>)[name] = (...args: unknown[]) =>
      readCache.unseen(() => op(...args));
  }
  const ping = db.prepare("SELECT 1");
  let checkpointer: Checkpointer | undefined;
  if (opts.backgroundCheckpoints && isFilePath(path)) {
    db.pragma(`wal_autocheckpoint = ${fallbackCheckpointPages}`);
    checkpointer = startCheckpointer(path, { onError: opts.backgroundCheckpoints.onError });
  }
  let closed = false;
  // Readiness while the disk is full: from a write refused for lack of space until the next
  // write that succeeds, or for fullForMs at most (so that a probe that keeps traffic away
  // cannot keep the server unready for ever).
  let fullSince: number | undefined;
  const changes = db.prepare("SELECT total_changes()").pluck();
  const watch = {
    before: () => (fullSince === undefined ? 0 : (changes.get() as number)),
    after: (err: unknown, before: number) => {
      if (err instanceof StoreError && err.kind === "storage_full") fullSince = Date.now();
      else if (!err && fullSince !== undefined && (changes.get() as number) > before) {
        fullSince = undefined;
      }
    },
  };
  // While an `atomically` callback holds the connection (its transaction open across awaits),
  // every other call waits for it to end: nothing joins its transaction by accident.
  let held: Promise<void> | undefined;
  const waitTurn = async () => {
    while (held) await held;
  };
  // Writes that arrive in one turn of the event loop share one commit (group-commit.ts).
  const commits = createGroupCommit(
    db,
    fromSqliteError,
    () => held,
    (outcome) => {
      const full = outcome.errors.some((e) => e instanceof StoreError && e.kind === "storage_full");
      if (full) fullSince = Date.now();
      else if (outcome.committed > 0) fullSince = undefined;
    },
  );
  // No access answer depends on an event or a webhook delivery: the append leaves the read
  // cache warm (what the change itself wrote before it still counts), as PostgreSQL's append
  // notifies no replica. Without it, every change made for an RPC, a group create included,
  // emptied the cache however neutral the change.
  const events = {
    drive: <R>(steps: Steps<R>): R => readCache.unseen(() => runner.drive(steps)),
    now: opts.now ?? Date.now,
  };
  // The change and its event commit together: a savepoint inside a batch or atomically. One
  // transaction function made once (better-sqlite3 builds four wrappers for each). Alone, it
  // begins IMMEDIATE: a deferred BEGIN reads first (the change's checks, the prior record) and
  // then asks for the write lock inside an open transaction, where SQLite answers BUSY at once
  // rather than wait busy_timeout for another process's commit (two servers on one file, as in
  // a restart, refused a write 503 while the other one committed).
  const inSavepoint = db.transaction((fn: () => unknown) => fn()).immediate;
  const recording = <R>(fn: () => R): R => inSavepoint(fn) as R;
  const guarded = guard(
    ops,
    recording,
    () => closed,
    watch,
    () => held !== undefined && waitTurn(),
    events,
    commits,
  );
  const inside = guard(
    ops,
    recording,
    () => closed,
    watch,
    () => false,
    events,
  );
  const tx: Store = {
    ...inside,
    ping: () => Promise.resolve(),
    close: () => Promise.reject(new Error("close() inside atomically")),
    // A view's transaction is the view itself: its changes record its call.
    atomically(fn) {
      return fn(this);
    },
    recording: (scope) => callView(tx, scope),
    accessCacheCounts: () => ({ ...readCache.counts }),
  };
  /**
   * Run `fn` in one transaction holding the connection; with `scope`, the transaction's store
   * records the call's event with its first change.
   */
  const atomically = async <R>(fn: (t: Store) => Promise<R>, scope?: AuditScope): Promise<R> => {
    if (closed) throw new StoreError("unavailable", "the store is closed");
    await waitTurn();
    // A rolled-back transaction takes its event with it: the call may still record one.
    const recorded = scope?.recorded;
    let release!: () => void;
    held = new Promise((r) => {
      release = r;
    });
    try {
      // Operations inside run their own transactions as savepoints of this one.
      db.exec("BEGIN IMMEDIATE");
      try {
        const result = await fn(scope ? callView(tx, scope) : tx);
        db.exec("COMMIT");
        return result;
      } catch (err) {
        if (db.inTransaction) db.exec("ROLLBACK");
        if (scope && recorded !== undefined) scope.recorded = recorded;
        readCache.clear();
        throw err;
      }
    } catch (err) {
      throw fromSqliteError(err);
    } finally {
      held = undefined;
      release();
    }
  };
  const store: SqliteStore = {
    ...guarded,
    db,
    accessCacheCounts: () => ({ ...readCache.counts }),
    // Through a call's view (`this`), the transaction's changes record the call.
    atomically(fn) {
      return atomically(fn, scopeOf(this));
    },
    recording: (scope) => callView(store, scope),
    async ping() {
      if (closed) throw new StoreError("unavailable", "the store is closed");
      if (fullSince !== undefined && Date.now() - fullSince < fullForMs) {
        throw new StoreError("storage_full", "the database's storage is full");
      }
      try {
        ping.get();
      } catch (err) {
        throw Object.assign(new StoreError("unavailable", "the database does not answer"), {
          cause: err,
        });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await checkpointer?.stop();
      db.close();
    },
  };
  return store;
}

/**
 * The schema of a fresh ":memory:" database after every migration, as SQLite serializes it:
 * migrated once a process, then copied into each new one. The tests open hundreds of them a
 * run, and running the migration steps took 40-80 ms each (a test server's start was 240-400).
 */
let migratedImage: Buffer | undefined;

/** The database at `path`, migrated to this Gatehouse's schema (migrate). */
function openMigrated(path: string, opts: SqliteStoreOptions): Database {
  const fresh = path === ":memory:";
  const db = open(fresh && migratedImage ? migratedImage : path, opts);
  // A copy of the image is at the last version already: migrate only checks it.
  migrate(db);
  if (fresh && !migratedImage) migratedImage = db.serialize();
  return db;
}

function open(path: string | Buffer, opts: SqliteStoreOptions): Database {
  const busyTimeoutMs = opts.busyTimeoutMs ?? 5000;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new Error(`busyTimeoutMs must be a non-negative integer, not ${busyTimeoutMs}`);
  }
  if (typeof path === "string" && isFilePath(path)) createOwnerOnly(path);
  const db = new Sqlite(path, { timeout: busyTimeoutMs });
  try {
    // WAL lets readers go on while one writer commits; ":memory:" stays in "memory" mode.
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${opts.synchronous ?? "FULL"}`);
    db.pragma("foreign_keys = ON");
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    // Savepoint journals in memory: every write of a group commit, and every change with its
    // event, is a savepoint of the batch's transaction, whose sub-journal keeps a copy of each
    // page it dirties. Past 64 KiB (a create and its event) SQLite spilled it to a temporary
    // file, written and read back for nothing: 25-30 us of system time a create with events.
    db.pragma("temp_store = MEMORY");
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Create the database's directory (0700) and file (0600) if missing, before SQLite does: the
 * file holds the token signing keys. SQLite gives the WAL and shared-memory files the mode of
 * the database file. An existing file keeps its mode (the server refuses a readable one).
 */
function createOwnerOnly(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}

/** Whether `path` names a file on disk (not ":memory:", a temporary "" or a "file:" URI). */
function isFilePath(path: string): boolean {
  return path !== "" && path !== ":memory:" && !path.startsWith("file:");
}

/**
 * Whether an operation runs at once rather than with the next group commit: every read, and a
 * write that commits on its own (ownCommit: touchIdentity's lastSeenTime, with its own
 * synchronous setting, relaxedDurability in ops/operation.ts). Sorting a write here only
 * costs it a commit of its own; a read sorted as a write would wait a turn for nothing.
 */
function runsAtOnce(name: string): boolean {
  const b = behaviourOf(name);
  return !b.write || b.ownCommit === true;
}

type AsyncOps<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never;
};

/** Make synchronous operations async, refused once closed, throwing only StoreErrors for what
 * a caller can cause. */
function guard<T extends Record<string, (...args: never[]) => unknown>>(
  ops: T,
  recording: <R>(fn: () => R) => R,
  isClosed: () => boolean,
  watch: { before: () => number; after: (err: unknown, before: number) => void },
  /** A promise to wait for before running (another caller's transaction), or false. */
  turn: () => Promise<void> | false,
  /**
   * Where a change made for a mutating RPC writes its event (ops/events.ts appendEvent, driven
   * with no transaction of its own: in the change's savepoint).
   */
  events: { drive: <R>(steps: Steps<R>) => R; now: () => number },
  /** Where writes go to share a commit; without it, every operation runs at once. */
  commits?: GroupCommit,
): AsyncOps<T> {
  const out: Record<string, (this: unknown, ...args: never[]) => Promise<unknown>> = {};
  for (const [name, plain] of Object.entries(ops)) {
    // The one place a change meets its event: a write made through a call's view (`this`,
    // Store.recording) appends the call's event in its own transaction (a savepoint of the
    // batch's, or of atomically's).
    const audited = isAuditedWrite(name);
    // An update's or a delete's record as it was, read in the change's savepoint: its event
    // tells the old values and what was deleted (change-data.ts).
    const priorName = audited ? priorReadOf(name, (n) => n in ops) : undefined;
    const prior = priorName === undefined ? undefined : ops[priorName]!;
    const op = (scope: AuditScope | undefined, args: never[]) => {
      if (!scope || scope.recorded) return plain(...args);
      return recording(() => {
        const before =
          prior && typeof args[0] === "string" ? prior(...([args[0]] as never[])) : undefined;
        const result = plain(...args);
        const row = eventFor(scope, args, result, events.now(), before);
        if (row) {
          events.drive(appendEvent(row));
          scope.recorded = true;
        }
        return result;
      });
    };
    if (commits && !runsAtOnce(name)) {
      out[name] = async function (...args) {
        const scope = audited ? scopeOf(this) : undefined;
        const wait = turn();
        if (wait) await wait;
        if (isClosed()) throw new StoreError("unavailable", "the store is closed");
        return commits.enqueue(() => op(scope, args));
      };
      continue;
    }
    out[name] = async function (...args) {
      const scope = audited ? scopeOf(this) : undefined;
      const wait = turn();
      if (wait) await wait;
      if (isClosed()) throw new StoreError("unavailable", "the store is closed");
      const before = watch.before();
      try {
        const result = op(scope, args);
        watch.after(undefined, before);
        return result;
      } catch (err) {
        const mapped = fromSqliteError(err);
        watch.after(mapped, before);
        throw mapped;
      }
    };
  }
  return out as AsyncOps<T>;
}
