import {
  checkIdentifiers,
  cursorCondition,
  filterConditions,
  type ListColumns,
  orderBy,
  type UidSet,
  whereOf,
} from "../list-clauses.js";
import type { ListQuery } from "../store.js";
import type { PgDb, PgParam, Sql } from "./pg-db.js";

/**
 * A WHERE condition with its parameters; resources add these for their own filters. Write
 * `?` for each parameter: the list SQL numbers them ($1, $2, ...) in order. (No other `?` may
 * appear in the text.)
 */
export interface PgCondition {
  /** An SQL boolean expression over the table aliased `t`. */
  sql: string;
  params: PgParam[];
}

/** Where a listable resource keeps what the list SQL needs; for groups, a count too. */
export interface PgListTable extends ListColumns {
  /** For the groups table: how many groups lie strictly below a uid (0 if absent). */
  below?: (sql: Sql, uid: string) => Promise<number>;
}

/** A page of raw rows, with the count of every match. */
export interface PgRowPage<Row> {
  rows: Row[];
  total: number;
  hasMore: boolean;
}

/** Runs keyset-paginated lists over one table. */
export interface PgListSql<Row> {
  /** Run `query` plus the resource's own conditions; the page and the count see one snapshot. */
  list(query: ListQuery<unknown>, extra?: readonly PgCondition[]): Promise<PgRowPage<Row>>;
}

/**
 * The list SQL of a table, on PostgreSQL: the same semantics as SQLite's (see its comment):
 * descendantsOf as the uid range `uid > 'G/' AND uid < 'G0'` (bytewise: the columns are
 * COLLATE "C"), childrenOf as `parent = G`, scope through the closure table, keyset cursors
 * on (sort column, uid), one row more than the page to tell whether more follow, and the count
 * of a bare subtree read from the group's descendant count. The planner picks between walking
 * an order index and sorting the subtree on its own statistics.
 */
export function createPgListSql<Row>(db: PgDb, t: PgListTable): PgListSql<Row> {
  checkIdentifiers(t);

  return {
    list: (query, extra = []) =>
      db.read(async (sql) => {
        const filter: PgCondition[] = filterConditions(t, query, extra, arrayUids);
        const subtreeOnly = query.descendantsOf !== undefined && filter.length === 1;
        let total: number;
        if (query.noTotal) {
          total = 0;
        } else if (subtreeOnly && t.below) {
          total = await t.below(sql, query.descendantsOf!);
        } else {
          const [text, params] = numbered(
            `SELECT COUNT(*)::bigint AS n FROM ${t.table} AS t${whereOf(filter)}`,
            filter,
          );
          total = (await sql.one<{ n: number }>(text, params))?.n ?? 0;
        }
        const page = query.after ? [...filter, cursorCondition(t, query)] : filter;
        const [text, params] = numbered(
          `SELECT t.* FROM ${t.table} AS t${whereOf(page)} ORDER BY ${orderBy(t, query)} LIMIT ? OFFSET ?`,
          [...page, { sql: "", params: [query.limit + 1, query.skip] }],
        );
        const rows = await sql.rows<Row>(text, params);
        const hasMore = rows.length > query.limit;
        if (hasMore) rows.pop();
        return { rows, total, hasMore };
      }),
  };
}

// Scope uids arrive as one text[] parameter: one SQL shape for any number.
const arrayUids: UidSet<string[]> = {
  match: (column) => `${column} = ANY(?::text[])`,
  bind: (uids) => [...uids],
  rootOf: (column) => `split_part(${column}, '/', 1)`,
};

/** Number the `?` placeholders of `text` in order, and gather the conditions' parameters. */
export function numbered(text: string, conditions: readonly PgCondition[]): [string, PgParam[]] {
  let n = 0;
  return [text.replace(/\?/g, () => `$${++n}`), conditions.flatMap((c) => c.params)];
}
