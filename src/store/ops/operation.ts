/**
 * A store operation written once for both backends: a generator that yields the statements it
 * wants run and receives their results, doing no I/O itself (sans-I/O). The SQLite runner
 * (sqlite/run-sync.ts) drives it synchronously inside better-sqlite3's transaction, so group
 * commit and the no-await rule hold; the PostgreSQL runner (postgres/run-async.ts) drives it
 * with awaits inside a SERIALIZABLE transaction, retried from the start. Its behaviour (is it a
 * write, can it change an access answer) is data on the operation that both backends read.
 * docs/store-operations.md tells how to write one.
 */
import type { ListColumns } from "../list-clauses.js";
import {
  type GroupRecord,
  type ListPage,
  type ListQuery,
  type NewGroup,
  notFoundError,
  type Store,
} from "../store.js";

/**
 * A value bound to a `?` placeholder. The SQLite runner binds booleans as 0 and 1 and a list
 * of strings as JSON text (read it with json_each); PostgreSQL gets the list as an array
 * (`?::text[]`, `unnest`, `ANY`): a statement taking a list has a text per dialect.
 */
export type Param = string | number | boolean | Buffer | null | readonly string[];

/** Statement text for both backends, or one text per backend where the dialects differ. */
export type Text = string | { readonly sqlite: string; readonly pg: string };

/**
 * One statement for the runner, with `?` placeholders (PostgreSQL's runner numbers them; no
 * other `?` may appear in the text) and what the operation wants back: the first row, every
 * row, the first column of every row, or the number of rows the statement touched.
 */
export interface SqlStmt {
  readonly want: "one" | "rows" | "column" | "count";
  readonly text: Text;
  readonly params: readonly Param[];
}

/**
 * The steps each backend writes its own way, which shared operations call as one step (a
 * dialect hook): creating a group is a few statements on SQLite and one CTE on PostgreSQL.
 */
export interface Hooks {
  /** Create a group and its closure rows (Store.createGroup's checks included). */
  createGroup(g: NewGroup): GroupRecord;
}

/** A call of a backend's hook, in the operation's transaction. */
export interface HookCall {
  readonly want: "hook";
  readonly hook: keyof Hooks;
  readonly args: readonly unknown[];
}

/**
 * An UPDATE of one row, and that row as it is after (updateRow): PostgreSQL runs `text` with
 * RETURNING *, SQLite runs it and then `reread` with `key`.
 */
export interface UpdateRowStmt {
  readonly want: "updateRow";
  readonly text: string;
  readonly params: readonly Param[];
  readonly reread: string;
  readonly key: Param;
}

/**
 * A question for the runner: which backend it is. For the rare step that one backend does in
 * one statement and the other in several (appendEvent: one round trip on PostgreSQL).
 */
export interface DialectQuestion {
  readonly want: "dialect";
}

/** What an operation yields: a statement, an updated row, a hook call or the dialect question. */
export type Stmt = SqlStmt | UpdateRowStmt | HookCall | DialectQuestion;

/** The backend running the operation. */
export function* dialect(): Steps<"sqlite" | "pg"> {
  return (yield { want: "dialect" }) as "sqlite" | "pg";
}

/** Call the backend's hook `name` in the operation's transaction. */
export function* hook<K extends keyof Hooks>(
  name: K,
  ...args: Parameters<Hooks[K]>
): Steps<ReturnType<Hooks[K]>> {
  return (yield { want: "hook", hook: name, args }) as ReturnType<Hooks[K]>;
}

/** The body of an operation: yields statements, receives their results, returns its own. */
export type Steps<R> = Generator<Stmt, R, unknown>;

/** The first row of a statement, or undefined (`yield* one<Row>(...)`). */
export function* one<T>(text: Text, ...params: Param[]): Steps<T | undefined> {
  return (yield { want: "one", text, params }) as T | undefined;
}

/** Every row of a statement. */
export function* rows<T>(text: Text, ...params: Param[]): Steps<T[]> {
  return (yield { want: "rows", text, params }) as T[];
}

/**
 * The first column of every row. SQLite hands the values over without making a row object
 * each: for an owner's 60-odd capabilities, the rows cost an access-cache miss ~25%.
 */
export function* column<T>(text: Text, ...params: Param[]): Steps<T[]> {
  return (yield { want: "column", text, params }) as T[];
}

/** Run a statement; how many rows it touched. */
export function* run(text: Text, ...params: Param[]): Steps<number> {
  return (yield { want: "count", text, params }) as number;
}

/** Whether a statement returns a row. */
export function* exists(text: Text, ...params: Param[]): Steps<boolean> {
  // Yielded here rather than through `one`: each level of yield* costs every statement.
  return (yield { want: "one", text, params }) !== undefined;
}

/**
 * The row `select` finds by `key`, or a not_found StoreError naming `what` and the key: what
 * every resource's Get, Update and Delete answer for a uid that is not there.
 */
export function* found<T>(what: string, select: string, key: string): Steps<T> {
  // Yielded here rather than through `one`, as in `exists`.
  const row = (yield { want: "one", text: select, params: [key] }) as T | undefined;
  if (row === undefined) throw notFoundError(what, key);
  return row;
}

/**
 * Run `update`, an UPDATE of the one row that `at.reread` (`SELECT * FROM <table> WHERE ...
 * = ?`) finds by `at.key`, and return that row as it is after, or undefined if there is none.
 * PostgreSQL adds RETURNING * to the UPDATE, sparing a round trip. SQLite runs the UPDATE and
 * then the re-read: its UPDATE ... RETURNING, which first sets the returned rows aside, made
 * updateRepo about 5% slower than the two statements (bench/RESULTS.md, issue 26). An
 * INSERT ... RETURNING costs SQLite nothing extra and stays as it is.
 */
export function* updateRow<T>(
  at: { reread: string; key: Param },
  update: string,
  ...params: Param[]
): Steps<T | undefined> {
  return (yield { want: "updateRow", text: update, params, ...at }) as T | undefined;
}

/** How an operation runs, read by both backends' runners and stores. */
export interface Behaviour {
  /**
   * A write: one write transaction (SQLite BEGIN IMMEDIATE, sharing the next group commit;
   * PostgreSQL SERIALIZABLE, retried). Reads run their statements outside a transaction,
   * unless `snapshot`.
   */
  readonly write: boolean;
  /**
   * A write no access answer depends on (those come from identities, roles and bindings
   * alone): it leaves the access caches warm, SQLite's on this connection and, on
   * PostgreSQL, every replica's (no notice on the change feed).
   */
  readonly accessNeutral?: boolean;
  /** A read of several statements that must all see one snapshot. */
  readonly snapshot?: boolean;
  /**
   * A write that commits at once rather than with the next group commit on SQLite (one that
   * sets its own durability, such as touchIdentity).
   */
  readonly ownCommit?: boolean;
  /**
   * A write whose commit need not wait for the disk: SQLite runs it with `PRAGMA synchronous =
   * NORMAL` and restores the store's setting after it (in WAL mode the commit survives a crash
   * of the process and reaches the disk with the next durable commit or checkpoint; a power
   * loss may forget it). Only for what a power loss may lose (touchIdentity's lastSeenTime,
   * never a grant or a revocation), and only with `ownCommit`: a group commit's batch is one
   * transaction, whose durability cannot change half way. Inside a transaction already open
   * (`atomically`) that transaction's commit decides. PostgreSQL ignores it (such a write
   * says `autocommit` to spare its round trips there).
   */
  readonly relaxedDurability?: boolean;
  /**
   * A write that is no change an event records: the server's own upkeep (lastSeenTime,
   * secrets, settings, the pruning of signing keys and events). Both stores append the call's
   * event beside every other write made inside an audit scope (src/events/audit-scope.ts),
   * never beside a read. isAuditedWrite (ops/all.ts) reads it.
   */
  readonly bookkeeping?: boolean;
  /**
   * The key of the writers this one would conflict with anyway (an organization's tree): on
   * PostgreSQL they take turns on it from their first attempt (TxOptions.turnKey) instead of
   * failing serialization and retrying; SQLite's one writer needs none.
   */
  readonly turn?: (...args: never[]) => string;
  /**
   * An access-neutral write of one statement that needs no transaction: PostgreSQL runs it on
   * a pooled connection, sparing BEGIN and COMMIT. SQLite's batch is one transaction anyway;
   * with `ownCommit`, outside `atomically`, the statement is SQLite's own autocommit one.
   */
  readonly autocommit?: boolean;
  /**
   * An access-neutral write whose concurrency its own SQL controls (the webhook outbox's
   * claim: FOR UPDATE SKIP LOCKED and a lease): PostgreSQL runs it in one READ COMMITTED
   * transaction, where SERIALIZABLE would fail concurrent claims only to retry them. SQLite's
   * one writer is serial anyway.
   */
  readonly readCommitted?: boolean;
}

/** An operation: its behaviour and its body. */
export interface Operation<A extends unknown[], R> extends Behaviour {
  readonly kind: "steps";
  readonly steps: (...args: A) => Steps<R>;
}

/**
 * A List over one table, run by each backend's list engine (keyset pages, tree filters,
 * scope). `prepare` turns the query into what the engine runs, with the resource's own
 * conditions (`?` placeholders) for its filters.
 */
export interface ListOperation<F, Row, Rec> extends Behaviour {
  readonly kind: "list";
  readonly columns: ListColumns;
  readonly recordOf: (row: Row) => Rec;
  readonly prepare?: (query: ListQuery<F>) => PreparedList;
}

/**
 * A read of one statement's first row, made a record by `recordOf`, or undefined when there is
 * none. The statement takes one parameter, the method's one argument (a uid, a name, a code's
 * hash); like a driven operation, it ignores any further arguments. The runners prepare the
 * statement once and call it directly, with no generator to drive: the point reads that nearly
 * every call makes (getRepo, getIdentity) ran at about 0.8x of the hand-written code when
 * driven (bench/RESULTS.md, issue 26).
 */
export interface LookupOperation<Row, R> extends Behaviour {
  readonly kind: "lookup";
  readonly text: Text;
  readonly recordOf: (row: Row) => R;
}

/** The key of a lookup: bound as it is by both drivers. */
export type LookupParam = string | number;

/** A list query as the engine runs it, and the resource's own conditions. */
export interface PreparedList {
  query: Omit<ListQuery<unknown>, "descendantsOf"> & { descendantsOf?: string };
  extra: { sql: Text; params: Param[] }[];
}

// biome-ignore lint/suspicious/noExplicitAny: the runners take operations of every signature
type Any = any;

/** Any operation, as the runners see it. */
export type AnyOperation =
  | Operation<Any[], Any>
  | ListOperation<Any, Any, Any>
  | LookupOperation<Any, Any>;

/** A write: `extra` adds behaviour (`{ accessNeutral: true }`). */
export function write<A extends unknown[], R>(
  steps: (...args: A) => Steps<R>,
  extra: Omit<Behaviour, "write" | "snapshot"> = {},
): Operation<A, R> {
  return { kind: "steps", write: true, ...extra, steps };
}

/** A read; `{ snapshot: true }` when its statements must see one snapshot. */
export function read<A extends unknown[], R>(
  steps: (...args: A) => Steps<R>,
  extra: { snapshot?: boolean } = {},
): Operation<A, R> {
  return { kind: "steps", write: false, ...extra, steps };
}

/** A read of `text`'s first row, made a record by `recordOf` (LookupOperation). */
export function lookup<Row, R>(text: Text, recordOf: (row: Row) => R): LookupOperation<Row, R> {
  return { kind: "lookup", write: false, text, recordOf };
}

/** A List over `columns`, each row made a record by `recordOf`. */
export function list<F, Row, Rec>(
  columns: ListColumns,
  recordOf: (row: Row) => Rec,
  prepare?: (query: ListQuery<F>) => PreparedList,
): ListOperation<F, Row, Rec> {
  return {
    kind: "list",
    write: false,
    snapshot: true,
    columns,
    recordOf,
    ...(prepare ? { prepare } : {}),
  };
}

/**
 * The operations that implement some Store methods: each method's arguments and result,
 * checked by the compiler against the contract.
 */
export type OpsOf<K extends keyof Store> = {
  [P in K]: Store[P] extends (query: ListQuery<infer F>) => Promise<ListPage<infer Rec>>
    ? // biome-ignore lint/suspicious/noExplicitAny: a list's row type is the operation's own
      ListOperation<F, any, Rec> | Operation<[ListQuery<F>], ListPage<Rec>>
    : Store[P] extends (...args: infer A) => Promise<infer R>
      ?
          | Operation<A, R>
          | (undefined extends R
              ? A extends [LookupParam]
                ? // biome-ignore lint/suspicious/noExplicitAny: a lookup's row type is its own
                  LookupOperation<any, Exclude<R, undefined>>
                : never
              : never)
      : never;
};

/** The synchronous methods a set of operations becomes on SQLite. */
export type SyncMethods<O> = {
  [K in keyof O]: O[K] extends Operation<infer A, infer R>
    ? (...args: A) => R
    : O[K] extends ListOperation<infer F, infer _Row, infer Rec>
      ? (query: ListQuery<F>) => ListPage<Rec>
      : O[K] extends LookupOperation<infer _Row, infer R>
        ? (key: LookupParam) => R | undefined
        : never;
};

/** The asynchronous methods a set of operations becomes on PostgreSQL. */
export type AsyncMethods<O> = {
  [K in keyof O]: O[K] extends Operation<infer A, infer R>
    ? (...args: A) => Promise<R>
    : O[K] extends ListOperation<infer F, infer _Row, infer Rec>
      ? (query: ListQuery<F>) => Promise<ListPage<Rec>>
      : O[K] extends LookupOperation<infer _Row, infer R>
        ? (key: LookupParam) => Promise<R | undefined>
        : never;
};

/** The text of a statement for one backend. */
export function textFor(text: Text, backend: "sqlite" | "pg"): string {
  return typeof text === "string" ? text : text[backend];
}
