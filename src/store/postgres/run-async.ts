import {
  type AnyOperation,
  type AsyncMethods,
  type Hooks,
  type LookupParam,
  type SqlStmt,
  type Steps,
  textFor,
  type UpdateRowStmt,
} from "../ops/operation.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, Sql } from "./pg-db.js";

/**
 * The asynchronous runner: drives shared operations (ops/operation.ts) on PostgreSQL. A write
 * runs in `db.write`'s SERIALIZABLE transaction, retried from the start (a generator is made
 * anew for each attempt, so a retry re-runs the checks), notifying the replicas' access
 * caches unless the operation is access-neutral; a snapshot read in `db.read`; a plain read
 * or a lookup on a pooled connection.
 */
export interface AsyncRunner {
  /** The operations as asynchronous methods on `db`. */
  bind<O extends Record<string, AnyOperation>>(ops: O): AsyncMethods<O>;
}

/** PostgreSQL's own steps (ops/operation.ts Hooks), run on a transaction's `sql`. */
export type PgHooks = {
  [K in keyof Hooks]: (sql: Sql, ...args: Parameters<Hooks[K]>) => Promise<ReturnType<Hooks[K]>>;
};

/** Drive `steps` to their end on `sql`, one statement after another. */
export async function driveAsync<R>(sql: Sql, hooks: PgHooks, steps: Steps<R>): Promise<R> {
  let next = steps.next();
  while (!next.done) {
    let result: unknown;
    try {
      const s = next.value;
      result =
        s.want === "hook"
          ? await (hooks[s.hook] as (sql: Sql, ...a: unknown[]) => Promise<unknown>)(sql, ...s.args)
          : s.want === "dialect"
            ? "pg"
            : await exec(sql, s);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(result);
  }
  return next.value;
}

/** Create the runner of `db` (the pool, or one transaction's connection). */
export function createAsyncRunner(db: PgDb, hooks: PgHooks): AsyncRunner {
  const method = (op: AnyOperation): ((...args: unknown[]) => Promise<unknown>) => {
    if (op.kind === "list") {
      // Made at the first call: a transaction's runner binds every operation (pg-store.ts),
      // and a write's transaction lists nothing.
      let lists: ReturnType<typeof createPgListSql<unknown>> | undefined;
      return async (query) => {
        lists ??= createPgListSql<unknown>(db, op.columns);
        const q = query as Parameters<typeof lists.list>[0];
        const prepared = op.prepare?.(q) ?? { query: q, extra: [] };
        const extra = prepared.extra.map((c) => ({ sql: textFor(c.sql, "pg"), params: c.params }));
        const page = await lists.list(prepared.query, extra);
        return { items: page.rows.map(op.recordOf), total: page.total, hasMore: page.hasMore };
      };
    }
    if (op.kind === "lookup") {
      const text = numbered(textFor(op.text, "pg"));
      const recordOf = op.recordOf;
      return async (key) => {
        const row = await db.sql.one(text, [key as LookupParam]);
        return row === undefined ? undefined : recordOf(row);
      };
    }
    if (op.write && op.autocommit) {
      if (!op.accessNeutral) throw new Error("only an access-neutral write may autocommit");
      return (...args) => driveAsync(db.sql, hooks, op.steps(...args));
    }
    if (op.write && op.readCommitted) {
      if (!op.accessNeutral) throw new Error("only an access-neutral write may run read committed");
      return (...args) => db.plain((sql) => driveAsync(sql, hooks, op.steps(...args)));
    }
    if (op.write) {
      const notify = !op.accessNeutral;
      return (...args) => {
        const turnKey = op.turn?.(...(args as never[]));
        return db.write(
          (sql) => driveAsync(sql, hooks, op.steps(...args)),
          turnKey === undefined ? { notify } : { notify, turnKey },
        );
      };
    }
    if (op.snapshot)
      return (...args) => db.read((sql) => driveAsync(sql, hooks, op.steps(...args)));
    return (...args) => driveAsync(db.sql, hooks, op.steps(...args));
  };

  return {
    bind<O extends Record<string, AnyOperation>>(ops: O) {
      const out: Record<string, unknown> = {};
      for (const [name, op] of Object.entries(ops)) out[name] = method(op);
      return out as AsyncMethods<O>;
    },
  };
}

/** `?` placeholders numbered as PostgreSQL wants them ($1, $2, ...), once per text. */
const numberedTexts = new Map<string, string>();
function numbered(text: string): string {
  let out = numberedTexts.get(text);
  if (out === undefined) {
    let n = 0;
    out = text.replace(/\?/g, () => `$${++n}`);
    if (numberedTexts.size < 5_000) numberedTexts.set(text, out);
  }
  return out;
}

function exec(sql: Sql, s: SqlStmt | UpdateRowStmt): Promise<unknown> {
  if (s.want === "updateRow") return sql.one(numbered(`${s.text} RETURNING *`), s.params);
  const text = numbered(textFor(s.text, "pg"));
  if (s.want === "one") return sql.one(text, s.params);
  if (s.want === "rows") return sql.rows(text, s.params);
  if (s.want === "column") {
    return sql.rows<Record<string, unknown>>(text, s.params).then((rs) => rs.map(firstValue));
  }
  return sql.run(text, s.params);
}

function firstValue(row: Record<string, unknown>): unknown {
  for (const k in row) return row[k];
  return undefined;
}
