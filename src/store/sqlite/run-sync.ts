import type { Database, Statement } from "better-sqlite3";
import {
  type AnyOperation,
  type Hooks,
  type Param,
  type Steps,
  type Stmt,
  type SyncMethods,
  textFor,
} from "../ops/operation.js";
import { createListSql, type SqlParam } from "./list-sql.js";

/**
 * The synchronous runner: drives shared operations (ops/operation.ts) on better-sqlite3, each
 * statement prepared once per text and reused. A write runs in a BEGIN IMMEDIATE transaction
 * (a savepoint inside a group commit's batch or `atomically`), a snapshot read in a deferred
 * one, a plain read statement by statement, a lookup by calling its one statement. `hooks`
 * are SQLite's own steps (Hooks).
 */
export interface SyncRunner {
  /** The operations as synchronous methods on this database. */
  bind<O extends Record<string, AnyOperation>>(ops: O): SyncMethods<O>;
  /** Drive `steps` to their end, statement by statement, with no transaction of its own. */
  drive<R>(steps: Steps<R>): R;
}

/** Create the runner of `db`. */
export function createSyncRunner(db: Database, hooks: Hooks): SyncRunner {
  const statements = new Map<string, Statement>();
  // A statement read a column at a time (`column`): pluck() is the statement's own mode.
  const pluckedStatements = new Map<string, Statement>();
  const plucked = (text: string): Statement => {
    let stmt = pluckedStatements.get(text);
    if (!stmt) {
      stmt = db.prepare(text).pluck();
      pluckedStatements.set(text, stmt);
    }
    return stmt;
  };
  const prepared = (text: string): Statement => {
    let stmt = statements.get(text);
    if (!stmt) {
      stmt = db.prepare(text);
      statements.set(text, stmt);
    }
    return stmt;
  };

  // On every statement of every operation: no copy of the parameters unless one needs binding.
  const exec = (s: Stmt): unknown => {
    if (s.want === "hook") return (hooks[s.hook] as (...a: unknown[]) => unknown)(...s.args);
    if (s.want === "dialect") return "sqlite";
    const text = typeof s.text === "string" ? s.text : s.text.sqlite;
    const stmt = statements.get(text) ?? prepared(text);
    const params = s.params.some(needsBinding) ? s.params.map(bindable) : (s.params as SqlParam[]);
    if (s.want === "one") return params.length === 1 ? stmt.get(params[0]) : stmt.get(...params);
    if (s.want === "rows") return stmt.all(...params);
    if (s.want === "column") return plucked(text).all(...params);
    if (s.want === "updateRow") {
      stmt.run(...params);
      return prepared(s.reread).get(bindable(s.key));
    }
    return stmt.run(...params).changes;
  };

  const drive = <R>(steps: Steps<R>): R => {
    let next = steps.next();
    while (!next.done) {
      let result: unknown;
      try {
        result = exec(next.value);
      } catch (err) {
        // The operation may catch a statement's failure; most let it through.
        next = steps.throw(err);
        continue;
      }
      next = steps.next(result);
    }
    return next.value;
  };

  const method = (op: AnyOperation): ((...args: unknown[]) => unknown) => {
    if (op.kind === "list") {
      const lists = createListSql<unknown>(db, op.columns);
      return (query) => {
        const q = query as Parameters<typeof lists.list>[0];
        const prepared = op.prepare?.(q) ?? { query: q, extra: [] };
        const extra = prepared.extra.map((c) => ({
          sql: textFor(c.sql, "sqlite"),
          params: c.params.map(bindable),
        }));
        const page = lists.list(prepared.query, extra);
        return { items: page.rows.map(op.recordOf), total: page.total, hasMore: page.hasMore };
      };
    }
    if (op.kind === "lookup") {
      // Prepared once, called directly: the hottest reads skip the generators (LookupOperation).
      const stmt = prepared(textFor(op.text, "sqlite"));
      const recordOf = op.recordOf;
      return (key) => {
        const row = stmt.get(key);
        return row === undefined ? undefined : recordOf(row);
      };
    }
    const body = (args: unknown[]) => drive(op.steps(...args));
    if (!op.write && !op.snapshot) return (...args) => body(args);
    const tx = db.transaction(body);
    // A one-statement write that commits on its own is SQLite's own autocommit transaction
    // outside `atomically`: BEGIN and COMMIT around it cost touchIdentity ~3% (in memory).
    const own =
      op.write && op.autocommit && op.ownCommit
        ? (...args: unknown[]) => (db.inTransaction ? tx.immediate(args) : body(args))
        : (...args: unknown[]) => tx.immediate(args);
    if (op.write && op.relaxedDurability) return relaxed(own, op);
    return op.write ? own : (...args) => tx(args);
  };

  /**
   * `write` with `PRAGMA synchronous = NORMAL` for its own commit, the store's setting (read
   * once, as the store opened it) restored after it (Behaviour.relaxedDurability). SQLite
   * refuses to change the setting inside a transaction: there the open one's commit decides.
   */
  const relaxed = (
    write: (...args: unknown[]) => unknown,
    op: { ownCommit?: boolean },
  ): ((...args: unknown[]) => unknown) => {
    if (!op.ownCommit) throw new Error("only a write that commits on its own may relax durability");
    const durable = db.pragma("synchronous", { simple: true }) as number;
    const relax = db.prepare("PRAGMA synchronous = NORMAL");
    const restore = db.prepare(`PRAGMA synchronous = ${durable}`);
    return (...args) => {
      if (db.inTransaction) return write(...args);
      relax.run();
      try {
        return write(...args);
      } finally {
        restore.run();
      }
    };
  };

  return {
    drive,
    bind<O extends Record<string, AnyOperation>>(ops: O) {
      const out: Record<string, unknown> = {};
      for (const [name, op] of Object.entries(ops)) out[name] = method(op);
      return out as SyncMethods<O>;
    },
  };
}

function needsBinding(p: Param): boolean {
  return typeof p === "boolean" || Array.isArray(p);
}

/** A parameter as better-sqlite3 binds it: booleans as 0 and 1, a list as JSON text. */
function bindable(p: Param): SqlParam {
  if (typeof p === "boolean") return p ? 1 : 0;
  if (Array.isArray(p)) return JSON.stringify(p);
  return p as SqlParam;
}
