import pg from "pg";
import { type Store, StoreError } from "../store.js";

/** A parameter bound to a `$n` placeholder. */
export type PgParam = string | number | boolean | Buffer | null | readonly string[];

/**
 * Sql runs statements on one connection: inside a transaction when handed out by `PgDb.write`
 * or `PgDb.read`, or on any pooled connection as `PgDb.sql`. Statements use `$1`, `$2`, ...
 * placeholders; values are always bound, never spliced into the text.
 */
export interface Sql {
  /** Every row of the result. */
  rows<T>(text: string, params?: readonly PgParam[]): Promise<T[]>;
  /** The first row, or undefined. */
  one<T>(text: string, params?: readonly PgParam[]): Promise<T | undefined>;
  /** Run a statement; the number of rows it touched. */
  run(text: string, params?: readonly PgParam[]): Promise<number>;
}

/** How a transaction runs. */
export interface TxOptions {
  /**
   * Whether the transaction's changes can alter an access answer (bindings, roles,
   * identities): then every replica's access cache is told at commit. Default true; an
   * access-neutral operation (ops/operation.ts) says false. A function is asked once the
   * transaction's work is done (atomically: whether any of its writes was not neutral).
   */
  notify?: boolean | (() => boolean);
  /**
   * Writers that would conflict anyway take turns on this key from their first attempt: an
   * advisory lock taken before BEGIN, so each starts from the previous one's commit. Group
   * creates and deletes pass their organization (each updates the counts of every group above
   * it), so one organization's tree changes one at a time, as on SQLite, while other
   * organizations' go on beside them.
   */
  turnKey?: string;
}

/** PgDb is the PostgreSQL connection pool as the store modules use it. */
export interface PgDb {
  /** Single statements on a pooled connection, each its own transaction. */
  readonly sql: Sql;
  /**
   * Run `fn` in a SERIALIZABLE transaction and commit. A serialization failure or deadlock
   * (SQLSTATE 40001, 40P01) rolls back and runs `fn` again from the start, at most
   * `maxAttempts` times: `fn` must do nothing but statements on its `Sql` (no other side
   * effects), so a retry never duplicates a write. Then `unavailable`.
   */
  write<R>(fn: (sql: Sql) => Promise<R>, opts?: TxOptions): Promise<R>;
  /** Run `fn` in a READ ONLY REPEATABLE READ transaction: every statement sees one snapshot. */
  read<R>(fn: (sql: Sql) => Promise<R>): Promise<R>;
  /** Run `fn` in a READ COMMITTED transaction, never retried and notifying nobody (migrations). */
  plain<R>(fn: (sql: Sql) => Promise<R>): Promise<R>;
  /** Commits seen so far that may have changed an access answer, here or on another replica. */
  readonly changes: ChangeFeed;
  /**
   * `SELECT 1` within `timeoutMs` (at most the call timeout); throws StoreError `unavailable`
   * otherwise, and `storage_full` for 30 s after a write was refused for lack of space (or
   * until a write commits again).
   */
  ping(timeoutMs: number): Promise<void>;
  /** End every connection. */
  close(): Promise<void>;
}

/** The change feed as the access cache reads it. */
export interface ChangeFeed {
  /**
   * A number that moves whenever a write that may change an access answer commits, on this
   * replica (at once) or on another (when its notification arrives). Undefined while the
   * feed cannot be trusted (the listening connection is down): then nothing may be cached.
   */
  epoch(): number | undefined;
}

/** Options of openPgDb. */
export interface PgDbOptions {
  /** Connections in the pool; default 10. */
  maxConnections?: number;
  /**
   * The longest a call waits on the database, all its waits together (a pooled connection, its
   * statements, its commit, its retries), before it fails `unavailable`; default 5 s. A stalled
   * connection is closed at that moment. Migrations (`plain`) are not bound by it.
   */
  timeoutMs?: number;
  /** How long a statement may run before PostgreSQL cancels it; default timeoutMs. */
  statementTimeoutMs?: number;
  /** How long to wait for a pooled connection before `unavailable`; default timeoutMs. */
  connectTimeoutMs?: number;
  /** Serialization retries; default 10 attempts in all. */
  maxAttempts?: number;
  /** Listen for other replicas' changes; default true (off for one-shot commands). */
  listen?: boolean;
  /**
   * The change feed's heartbeat interval; default 1 s. A feed silent 1.5 times this long is
   * presumed lost (nothing cached until it listens again).
   */
  heartbeatMs?: number;
  /** Told when the change feed's connection is lost or back, for the log. */
  onFeedState?: (up: boolean, err?: Error) => void;
}

/** The channel every write that may change an access answer notifies at commit. */
export const changeChannel = "gatehouse_changes";

/**
 * The key retried writers take turns on. Every advisory lock of the store is keyed by text
 * (hashed as PostgreSQL does, hashtextextended); an organization's uid never starts with ':'.
 */
const writersLock = ":writers";

// int8 (bigint) columns hold times in ms and counts: well inside 2^53, so numbers, not strings.
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Open a pool on `url` (postgres://...). Nothing connects until the first statement; the
 * store's migration is the first.
 */
export function openPgDb(url: string, opts: PgDbOptions = {}): PgDb {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const statementTimeoutMs = opts.statementTimeoutMs ?? timeoutMs;
  const config: pg.PoolConfig = {
    connectionString: url,
    max: opts.maxConnections ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? timeoutMs,
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: Math.max(statementTimeoutMs * 2, 10_000),
    application_name: "gatehouse",
    types,
    // TCP keepalive lets a connection to a host that vanished fail instead of hanging.
    keepAlive: true,
  };
  const pool = new pg.Pool(config);
  // An idle connection that breaks (the server restarted) is dropped by the pool; without a
  // listener its error would crash the process.
  pool.on("error", () => undefined);
  // A connection checked out of the pool that breaks between two statements (the server shut
  // down mid-transaction) emits its error on the client, where nothing listens: that would
  // crash the process. Its next statement fails instead (not queryable: `unavailable`), and
  // the pool discards it on release.
  pool.on("connect", (client) => client.on("error", () => undefined));
  const maxAttempts = opts.maxAttempts ?? 10;

  let localEpoch = 0;
  const feed =
    opts.listen === false
      ? undefined
      : startFeed(config, opts.heartbeatMs ?? 1_000, opts.onFeedState, () => {
          localEpoch++;
        });

  /** Since when writes are refused for lack of space (SQLSTATE 53100), if they are. */
  let fullSince: number | undefined;
  const noteFailure = (err: unknown) => {
    const code = sqlState(err) ?? sqlState((err as { cause?: unknown } | undefined)?.cause);
    if (code === "53100") fullSince = Date.now();
  };

  /**
   * Run `fn` on a pooled connection, all of it (the wait for the connection included) within
   * `deadline` (a performance.now() time). Past it the connection is closed under whatever it
   * waits for (PostgreSQL frozen, the network silently gone), which fails at once, and the
   * call fails `unavailable`. Without this a statement sent to a stalled server waits for as
   * long as TCP takes to give up: minutes.
   */
  async function withConnection<R>(
    deadline: number,
    fn: (client: pg.PoolClient, broken: (err: Error) => void) => Promise<R>,
  ): Promise<R> {
    const client = await acquire(pool, deadline, timeoutMs);
    let broken: Error | undefined;
    let late = false;
    const watchdog = Number.isFinite(deadline)
      ? setTimeout(
          () => {
            late = true;
            broken = new Error("the database did not answer in time");
            cut(client);
          },
          Math.max(0, deadline - performance.now()),
        )
      : undefined;
    try {
      return await fn(client, (err) => {
        broken ??= err;
      });
    } catch (err) {
      noteFailure(err);
      if (late) throw timedOut(timeoutMs, err);
      throw err;
    } finally {
      clearTimeout(watchdog);
      // A connection that failed or was cut is closed: a session lock it held goes with it.
      client.release(broken);
    }
  }

  const sql = poolSql((text, params) =>
    withConnection(performance.now() + timeoutMs, (client) => runQuery(client, text, params)),
  );

  /**
   * Run `fn` in a transaction opened with `begin`, retrying serialization failures.
   *
   * Optimistic first, queued after: a first attempt runs alongside every other transaction.
   * One that fails to serialize runs again holding the writers' advisory lock, taken before
   * BEGIN so that its snapshot starts after the lock's previous holder committed: writers that
   * contend (every create in one organization updates the organization's descendant count)
   * then take turns, as on SQLite, instead of aborting one another round after round.
   */
  async function transaction<R>(
    begin: string,
    fn: (sql: Sql) => Promise<R>,
    attempts: number,
    after?: () => void,
    turnKey?: string,
    bounded = true,
  ): Promise<R> {
    // One deadline for the whole call, retries included.
    const deadline = bounded ? performance.now() + timeoutMs : Number.POSITIVE_INFINITY;
    for (let attempt = 1; ; attempt++) {
      const retry = await withConnection(deadline, async (client, broken) => {
        // Taken in this order (a key's turn, then the retriers'), released together: no two
        // writers can each hold what the other waits for.
        const held: string[] = [];
        try {
          if (turnKey !== undefined) {
            await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [turnKey]);
            held.push(turnKey);
          }
          if (attempt > 1) {
            await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [writersLock]);
            held.push(writersLock);
          }
          await client.query(begin);
          const result = await fn(sqlOf(client));
          await client.query("COMMIT");
          after?.();
          return { result };
        } catch (err) {
          let rollbackFailed = false;
          await client.query("ROLLBACK").catch((e: Error) => {
            rollbackFailed = true;
            broken(e);
          });
          // An operation inside `atomically` reports a StoreError whose cause is the driver's.
          const code = sqlState(err) ?? sqlState((err as { cause?: unknown } | undefined)?.cause);
          if ((code === "40001" || code === "40P01") && attempt < attempts && !rollbackFailed) {
            return undefined;
          }
          throw err;
        } finally {
          for (const key of held.reverse()) {
            let failed = false;
            await client
              .query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key])
              .catch((e: Error) => {
                failed = true;
                broken(e);
              });
            if (failed) break;
          }
        }
      }).catch((err: unknown) => {
        throw fromPgError(err);
      });
      if (retry) return retry.result;
      // A little jitter, so that racers part ways.
      await sleep(Math.random() * 2);
    }
  }

  return {
    sql,
    changes: {
      epoch: () => {
        if (feed && !feed.up()) return undefined;
        return localEpoch + (feed?.count() ?? 0);
      },
    },
    async ping(ms) {
      try {
        await withConnection(performance.now() + Math.min(ms, timeoutMs), (client) =>
          client.query("SELECT 1"),
        );
      } catch (err) {
        throw Object.assign(new StoreError("unavailable", "the database does not answer"), {
          cause: err,
        });
      }
      if (fullSince !== undefined && Date.now() - fullSince < fullForMs) {
        throw new StoreError("storage_full", "the database's storage is full");
      }
    },
    write(fn, txOpts) {
      const wants = txOpts?.notify ?? true;
      let notify = false;
      return transaction(
        "BEGIN ISOLATION LEVEL SERIALIZABLE",
        async (s) => {
          const result = await fn(s);
          notify = typeof wants === "function" ? wants() : wants;
          if (notify) await s.run(`NOTIFY ${changeChannel}`);
          return result;
        },
        maxAttempts,
        // Our own commit: the cache forgets at once, before the caller hears of success. A
        // commit also shows there is room on disk again.
        () => {
          fullSince = undefined;
          if (notify) localEpoch++;
        },
        txOpts?.turnKey,
      );
    },
    read(fn) {
      return transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", fn, 1);
    },
    plain(fn) {
      // Migrations: not bound by the call timeout, and their statements may run 10 s at least
      // (a large table's step takes longer than a call should).
      const migrationTimeoutMs = Math.max(statementTimeoutMs, 10_000);
      return transaction(
        `BEGIN; SET LOCAL statement_timeout = ${migrationTimeoutMs}`,
        fn,
        1,
        undefined,
        undefined,
        false,
      );
    },
    async close() {
      await feed?.stop();
      await pool.end();
    },
  };
}

/**
 * Statements with parameters run as prepared statements: each distinct text gets a name once,
 * and every connection parses it the first time it runs it, then only binds and executes.
 */
const statementNames = new Map<string, string>();
function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= 5_000) return undefined;
    name = `gh${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name;
}

/** One statement on `client`, prepared when it has parameters (see statementName). */
function runQuery(
  client: pg.PoolClient,
  text: string,
  params?: readonly PgParam[],
): Promise<pg.QueryResult> {
  if (params === undefined || params.length === 0) return client.query(text);
  return client.query({ name: statementName(text), text, values: params as unknown[] });
}

/** Sql over a transaction's connection: errors go to the transaction, which maps them. */
function sqlOf(client: pg.PoolClient): Sql {
  return poolSql((text, params) => runQuery(client, text, params), false);
}

/** Sql over `run`; with `map`, driver errors come out as StoreErrors. */
function poolSql(
  run: (text: string, params?: readonly PgParam[]) => Promise<pg.QueryResult>,
  map = true,
): Sql {
  const query = async (text: string, params?: readonly PgParam[]) => {
    try {
      return await run(text, params);
    } catch (err) {
      if (!map) throw err;
      throw fromPgError(err);
    }
  };
  return {
    async rows<T>(text: string, params?: readonly PgParam[]) {
      return (await query(text, params)).rows as T[];
    },
    async one<T>(text: string, params?: readonly PgParam[]) {
      return (await query(text, params)).rows[0] as T | undefined;
    },
    async run(text: string, params?: readonly PgParam[]) {
      return (await query(text, params)).rowCount ?? 0;
    },
  };
}

/** How long after a write was refused for lack of space readiness says so (as on SQLite). */
const fullForMs = 30_000;

/** The call's failure when the database did not answer within its timeout. */
function timedOut(timeoutMs: number, cause?: unknown): StoreError {
  return Object.assign(
    new StoreError("unavailable", `the database did not answer within ${timeoutMs} ms`),
    { cause },
  );
}

/**
 * A pooled connection, by `deadline` (a performance.now() time). A connection that comes after
 * the deadline goes back to the pool unused.
 */
async function acquire(pool: pg.Pool, deadline: number, timeoutMs: number): Promise<pg.PoolClient> {
  const left = deadline - performance.now();
  if (left <= 0) throw timedOut(timeoutMs);
  const got = pool.connect();
  // Unbounded (migrations): the pool's own connection timeout applies.
  if (!Number.isFinite(left)) {
    return got.catch((err: unknown) => {
      throw Object.assign(new StoreError("unavailable", "the database does not answer"), {
        cause: err,
      });
    });
  }
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  try {
    return await Promise.race([
      got,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(timedOut(timeoutMs));
        }, left);
      }),
    ]);
  } catch (err) {
    if (late) {
      got.then(
        (c) => c.release(),
        () => undefined,
      );
      throw err;
    }
    throw Object.assign(new StoreError("unavailable", "the database does not answer"), {
      cause: err,
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Close a connection's socket under whatever it waits for: its pending query fails at once. */
function cut(client: pg.PoolClient): void {
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection
    ?.stream;
  stream?.destroy();
}

/**
 * The listening side of the change feed: one connection of its own, LISTENing on the channel,
 * counting notifications. A heartbeat checks it every heartbeatMs; a connection that errors, ends
 * or misses a heartbeat is "down" (nothing cached) until a new one listens again.
 */
function startFeed(
  config: pg.PoolConfig,
  heartbeatMs: number,
  onState: ((up: boolean, err?: Error) => void) | undefined,
  onReconnect: () => void,
): { up(): boolean; count(): number; stop(): Promise<void> } {
  let client: pg.Client | undefined;
  let listening = false;
  let count = 0;
  let stopped = false;
  /** The connection whose heartbeat is unanswered, and when it was sent. */
  let beating: pg.Client | undefined;
  let beatSent = 0;
  let lastBeat = 0;

  const down = (err?: Error) => {
    if (!listening && !client) return;
    const was = listening;
    listening = false;
    const c = client;
    client = undefined;
    c?.end().catch(() => undefined);
    if (was) onState?.(false, err);
  };

  const connectFeed = async () => {
    if (stopped || client) return;
    // The pool's statement timeout, not the heartbeat's: on a loaded machine a LISTEN that
    // takes a second must not be given up, or the feed never comes back.
    const c = new pg.Client(config);
    client = c;
    c.on("error", (err) => {
      if (client === c) down(err);
    });
    c.on("end", () => {
      if (client === c) down(new Error("the change feed's connection ended"));
    });
    c.on("notification", () => {
      count++;
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${changeChannel}`);
      if (stopped || client !== c) {
        await c.end().catch(() => undefined);
        return;
      }
      // Whatever changed while nobody listened is unknown: forget everything cached.
      onReconnect();
      count++;
      listening = true;
      lastBeat = Date.now();
      onState?.(true);
    } catch (err) {
      if (client === c) down(err as Error);
    }
  };

  const timer = setInterval(() => {
    if (stopped) return;
    if (!client) {
      void connectFeed();
      return;
    }
    if (!listening) return;
    const c = client;
    if (beating === c) {
      // No answer and no error: the socket may be silently dead (a network that drops
      // packets, a stalled server), and an answer may never come. Give the connection up and
      // listen on a new one rather than wait for TCP keepalive.
      if (Date.now() - beatSent > heartbeatMs) down(new Error("heartbeat late"));
      return;
    }
    beating = c;
    const sent = Date.now();
    beatSent = sent;
    c.query("SELECT 1")
      .then(() => {
        if (client !== c) return;
        if (Date.now() - sent > heartbeatMs) down(new Error("heartbeat late"));
        else lastBeat = Date.now();
      })
      .catch((err: Error) => {
        if (client === c) down(err);
      })
      .finally(() => {
        if (beating === c) beating = undefined;
      });
  }, heartbeatMs / 4);
  timer.unref();
  void connectFeed();

  return {
    // A heartbeat not answered within its interval also means down: the socket may be dead.
    up: () => listening && Date.now() - lastBeat < heartbeatMs * 1.5,
    count: () => count,
    async stop() {
      stopped = true;
      clearInterval(timer);
      const c = client;
      client = undefined;
      listening = false;
      await c?.end().catch(() => undefined);
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The SQLSTATE of a driver error, or undefined. */
export function sqlState(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null || !("code" in err)) return undefined;
  const { code } = err as { code: unknown };
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** How a PostgreSQL failure reaches the caller: a StoreError kind and its message. */
export interface PgFailure {
  /** A SQLSTATE, or a class: its two first characters and "*". */
  state: string;
  kind: StoreError["kind"];
  message: string;
}

/**
 * Every SQLSTATE a caller or a database that is away can cause, most specific first; any other
 * (a bug in our SQL) surfaces as INTERNAL. Every connection-level failure (the database away,
 * restarting, overloaded, ending our session or transaction) is `unavailable`: UNAVAILABLE, a
 * call the client may retry. docs/postgres.md lists them.
 */
export const pgFailures: readonly PgFailure[] = [
  { state: "23505", kind: "already_exists", message: "a record with the same key already exists" },
  {
    state: "23503",
    kind: "failed_precondition",
    message: "a referenced record is missing or still referenced",
  },
  // A NUL character in a text parameter: PostgreSQL text cannot hold one (SQLite can).
  { state: "22021", kind: "invalid_text", message: "text may not contain the NUL character" },
  { state: "22P05", kind: "invalid_text", message: "text may not contain the NUL character" },
  // Serialization failure, deadlock: after the retries.
  { state: "40001", kind: "unavailable", message: "the database is busy; retry" },
  { state: "40P01", kind: "unavailable", message: "the database is busy; retry" },
  // Disk full, then out of memory, too many connections and other resources.
  { state: "53100", kind: "storage_full", message: "the database's storage is full" },
  { state: "53*", kind: "unavailable", message: "the database is overloaded" },
  // The session's transaction ended by PostgreSQL: idle in transaction (an outage longer than
  // idle_in_transaction_session_timeout) or over transaction_timeout.
  { state: "25P03", kind: "unavailable", message: "the database ended the transaction; retry" },
  { state: "25P04", kind: "unavailable", message: "the database ended the transaction; retry" },
  // A lock not available (lock_timeout, NOWAIT).
  { state: "55P03", kind: "unavailable", message: "the database is busy; retry" },
  // Statement timeout or cancelled; the server shutting down, crashed, starting, idle session
  // timeout.
  { state: "57014", kind: "unavailable", message: "the database statement timed out" },
  { state: "57*", kind: "unavailable", message: "the database does not answer" },
  // Connection exceptions.
  { state: "08*", kind: "unavailable", message: "the database does not answer" },
  // System errors: I/O errors, files gone.
  { state: "58*", kind: "unavailable", message: "the database does not answer" },
];

/** The entry of pgFailures for a SQLSTATE, if any. */
export function pgFailureOf(code: string): PgFailure | undefined {
  return (
    pgFailures.find((f) => f.state === code) ??
    pgFailures.find((f) => f.state.endsWith("*") && code.startsWith(f.state.slice(0, 2)))
  );
}

/**
 * Turn a driver error a caller can cause, or a database that is away, into a StoreError
 * (pgFailures); any other error (a bug in our SQL) is returned unchanged and surfaces as
 * internal.
 */
export function fromPgError(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const code = sqlState(err);
  const failure = code === undefined ? undefined : pgFailureOf(code);
  const mapped = failure
    ? new StoreError(failure.kind, failure.message)
    : code === undefined && isConnectionError(err)
      ? new StoreError("unavailable", "the database does not answer")
      : undefined;
  return mapped ? Object.assign(mapped, { cause: err }) : err;
}

function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  if (code && /^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, EPIPE, ...
  return /Connection terminated|connection timeout|Client has encountered a connection error|Connection ended|not queryable/i.test(
    err.message,
  );
}

/** Some Store operations, as a PostgreSQL module implements them. */
export type PgOps<K extends keyof Store> = Pick<Store, K>;
