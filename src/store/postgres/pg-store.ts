import { type AuditScope, eventFor } from "../../events/audit-scope.js";
import { priorReadOf } from "../../events/change-data.js";
import type { CacheCounts } from "../access-answers.js";
import { callView, scopeOf } from "../call-view.js";
import { behaviourOf, createSharedOps, isAuditedWrite } from "../ops/all.js";
import { appendEvent } from "../ops/events.js";
import { seedBuiltins } from "../ops/roles.js";
import { type Store, StoreError, type StoreRoles } from "../store.js";
import { createPgAccessOps } from "./access.js";
import { createPgAdvisoryImport } from "./advisories.js";
import { createPgGroupOps } from "./groups.js";
import { migratePg } from "./migrations.js";
import { fromPgError, openPgDb, type PgDb, type PgDbOptions, type Sql } from "./pg-db.js";
import { createAsyncRunner, driveAsync, type PgHooks } from "./run-async.js";
import { createPgTagImport } from "./tags.js";

/** Options of createPostgresStore. */
export interface PostgresStoreOptions extends PgDbOptions {
  /** The built-in roles to seed and the owner role to protect (the server's catalog). */
  roles: StoreRoles;
  /**
   * The clock, for the create time of built-in roles seeded at open and for role binding
   * expiry in access answers; default Date.now.
   */
  now?: () => number;
}

/** PostgresStore is a Store with its pool in view, for tests and diagnostics only. */
export interface PostgresStore extends Store {
  readonly db: PgDb;
}

type DataOps = Omit<Store, "ping" | "close" | "atomically" | "recording" | "accessCacheCounts">;

/**
 * Open a Store on the PostgreSQL database at `url` (postgres://user:pass@host:port/db): bring
 * the schema up to date (once, whichever replica gets there first) and seed the built-in
 * roles. Any number of stores, in as many processes, may share the database: every operation
 * is one SERIALIZABLE transaction (retried on serialization failures), and the access cache
 * follows other replicas' writes through LISTEN/NOTIFY (see docs/postgres.md for the bound).
 */
export async function createPostgresStore(
  url: string,
  opts: PostgresStoreOptions,
): Promise<PostgresStore> {
  const db = openPgDb(url, opts);
  try {
    await migratePg(db);
    const now = (opts.now ?? Date.now)();
    // PostgreSQL's own steps (createGroup's CTE), which use only the transaction they are given.
    const hooks: PgHooks = { createGroup: createPgGroupOps(db).createGroupIn };
    await createAsyncRunner(db, hooks)
      .bind({ seedBuiltins })
      .seedBuiltins(opts.roles.builtins, now);
    // One count for the pool's cache and every transaction's: the access-cache metric.
    const counts: CacheCounts = { hits: 0, misses: 0 };
    const clock = opts.now ?? Date.now;
    const ops = poolOps(db, opts.roles, counts, clock);
    let closed = false;
    /**
     * Run `fn` in one SERIALIZABLE transaction, taking `turnKey`'s turn first (TxOptions): the
     * store's `atomically`, and a write rerouted to write its event beside it.
     */
    const transact = <R>(
      fn: (tx: Store) => Promise<R>,
      turnKey?: string,
      scope?: AuditScope,
    ): Promise<R> => {
      if (closed) {
        return Promise.reject(new StoreError("unavailable", "the store is closed"));
      }
      // db.write maps what escapes to StoreErrors, as every write does.
      // A retried transaction starts without the event its failed attempt wrote.
      const recorded = scope?.recorded;
      // The replicas' access caches are told at commit only if a write that can change an
      // access answer ran: a group created for an RPC (its event beside it) keeps them warm.
      let touchesAccess = false;
      const noted = (name: string) => {
        const b = behaviourOf(name);
        if (b.write && !b.accessNeutral) touchesAccess = true;
      };
      const written = db.write(
        async (sql) => {
          if (scope && recorded !== undefined) scope.recorded = recorded;
          touchesAccess = false;
          const txDb = boundTo(sql);
          const tx: Store = {
            ...guard(dataOps(txDb, opts.roles, counts, clock), () => closed, {
              sql,
              hooks,
              now: clock,
              noted,
            }),
            ping: () => Promise.resolve(),
            close: () => Promise.reject(new Error("close() inside atomically")),
            // A view's transaction is the view itself: its changes record its call.
            atomically(inner) {
              return inner(this);
            },
            recording: (other) => callView(tx, other),
            accessCacheCounts: () => ({ ...counts }),
          };
          return fn(scope ? callView(tx, scope) : tx);
        },
        { notify: () => touchesAccess, ...(turnKey === undefined ? {} : { turnKey }) },
      );
      // A transaction rolled back for good takes its event with it, as a retried one does:
      // the call may still record one (SQLite's atomically does the same).
      return scope && recorded !== undefined
        ? written.catch((err: unknown) => {
            scope.recorded = recorded;
            throw err;
          })
        : written;
    };
    // A write made for a call (Store.recording) runs in a transaction of its own that also
    // appends the call's event (the tx guard above): the outbox row commits with the change.
    const poolAudit: AuditHooks = {
      // The operation's turn key goes with it (an organization's tree changes one writer at a
      // time: TxOptions.turnKey), as when it runs in a transaction of its own.
      reroute: (name, args, scope) =>
        transact(
          (tx) =>
            (tx as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name]!(
              ...args,
            ),
          behaviourOf(name).turn?.(...(args as never[])),
          scope,
        ),
    };
    const store: PostgresStore = {
      ...guard(ops, () => closed, poolAudit),
      db,
      accessCacheCounts: () => ({ ...counts }),
      // The callback's calls share one SERIALIZABLE transaction: operations built on a PgDb
      // whose statements all go to that transaction's connection.
      // Through a call's view (`this`), the transaction's changes record the call.
      atomically(fn) {
        return transact(fn, undefined, scopeOf(this));
      },
      recording: (scope) => callView(store, scope),
      async ping(opts) {
        if (closed) throw new StoreError("unavailable", "the store is closed");
        await db.ping(opts?.timeoutMs ?? Number.POSITIVE_INFINITY);
      },
      async close() {
        if (closed) return;
        closed = true;
        await db.close();
      },
    };
    return store;
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** Every data operation, on `db` (the pool, or one transaction's connection). */
function dataOps(db: PgDb, roles: StoreRoles, counts: CacheCounts, now: () => number): DataOps {
  const groups = createPgGroupOps(db);
  const { createGroupIn, ...groupOps } = groups;
  const hooks: PgHooks = { createGroup: createGroupIn };
  // The operations written once for both backends (ops/), run with awaits. Their definitions
  // hold no connection: made once per roles, not again for every transaction (an audited
  // write is one of its own, and made them all: bench/RESULTS.md, issue 38 round five).
  const shared = createAsyncRunner(db, hooks).bind(sharedOpsOf(roles));
  // Each concept adds its operations here; the compiler checks that together they are a Store.
  return {
    ...groupOps,
    ...shared,
    // The access queries, identityExists among them, answered through the access cache.
    ...createPgAccessOps(db, shared, counts, undefined, now),
    // PostgreSQL's own bodies where its SQL or round trips really differ.
    ...createPgTagImport(db),
    ...createPgAdvisoryImport(db),
  };
}

const sharedOpsByRoles = new WeakMap<StoreRoles, ReturnType<typeof createSharedOps>>();
/** createSharedOps(roles), made once per roles object. */
function sharedOpsOf(roles: StoreRoles): ReturnType<typeof createSharedOps> {
  let ops = sharedOpsByRoles.get(roles);
  if (!ops) {
    ops = createSharedOps(roles);
    sharedOpsByRoles.set(roles, ops);
  }
  return ops;
}

/**
 * The operations on the pool: an access-neutral one (its behaviour, ops/all.ts) runs on a
 * PgDb whose transactions tell no replica, whoever wrote its body.
 */
function poolOps(db: PgDb, roles: StoreRoles, counts: CacheCounts, now: () => number): DataOps {
  const ops = dataOps(db, roles, counts, now);
  const quiet = dataOps(
    { ...db, write: (fn, o) => db.write(fn, { ...o, notify: false }) },
    roles,
    counts,
    now,
  );
  for (const name of Object.keys(ops) as (keyof DataOps)[]) {
    if (behaviourOf(name).accessNeutral) {
      (ops as Record<string, unknown>)[name] = quiet[name];
    }
  }
  return ops;
}

/**
 * A PgDb whose every statement runs on `sql`, one open transaction: nested writes and reads
 * join it, and its change feed has no epoch, so the access queries read the transaction's own
 * view instead of a cache.
 */
function boundTo(sql: Sql): PgDb {
  return {
    sql,
    write: (fn) => fn(sql),
    read: (fn) => fn(sql),
    plain: (fn) => fn(sql),
    changes: { epoch: () => undefined },
    ping: () => sql.run("SELECT 1").then(() => undefined),
    close: () => Promise.resolve(),
  };
}

/**
 * Where the events of changes made for a mutating RPC go: on the pool, `reroute` runs such a
 * write in a transaction of its own; inside one, the event is appended on its `sql`.
 */
interface AuditHooks {
  reroute?: (name: string, args: unknown[], scope: AuditScope) => Promise<unknown>;
  sql?: Sql;
  /** The hooks appendEvent is driven with on `sql` (it calls none today). */
  hooks?: PgHooks;
  now?: () => number;
  /** Told of every operation called inside a transaction, before it runs. */
  noted?: (name: string) => void;
}

/**
 * Refuse operations once closed; let only StoreErrors out for what a caller can cause; write
 * the event of a change made for a mutating RPC in the change's transaction.
 */
function guard<T extends object>(ops: T, isClosed: () => boolean, audit: AuditHooks): T {
  const out: Record<string, unknown> = {};
  type Op = (...a: unknown[]) => unknown;
  for (const [name, op] of Object.entries(ops) as [string, Op][]) {
    const audited = isAuditedWrite(name);
    // An update's or a delete's record as it was, read in the change's transaction: its
    // event tells the old values and what was deleted (change-data.ts).
    const priorName = audited ? priorReadOf(name, (n) => n in ops) : undefined;
    const prior = priorName === undefined ? undefined : (ops as Record<string, Op>)[priorName]!;
    out[name] = async function (this: unknown, ...args: unknown[]) {
      if (isClosed()) throw new StoreError("unavailable", "the store is closed");
      audit.noted?.(name);
      // A call's view (`this`, Store.recording) records the call's event with its change.
      const scope = audited ? scopeOf(this) : undefined;
      try {
        if (scope && !scope.recorded) {
          if (audit.reroute) return await audit.reroute(name, args, scope);
          const before =
            prior && audit.sql && typeof args[0] === "string" ? await prior(args[0]) : undefined;
          const result = await op(...args);
          const row = eventFor(scope, args, result, (audit.now ?? Date.now)(), before);
          if (row && audit.sql && audit.hooks) {
            // The outbox row and its deliveries, on the change's transaction.
            await driveAsync(audit.sql, audit.hooks, appendEvent(row));
            scope.recorded = true;
          }
          return result;
        }
        return await op(...args);
      } catch (err) {
        throw fromPgError(err);
      }
    };
  }
  return out as T;
}
