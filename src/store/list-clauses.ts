import type { ListQuery, SortField } from "./store.js";

/**
 * Where a listable resource keeps what the list SQL of either backend needs. Names are code
 * constants (checked to be plain identifiers by `checkIdentifiers`), never user input.
 */
export interface ListColumns {
  table: string;
  /** The row's uid, a UIDP. */
  uid: string;
  /**
   * The uid of the row's parent in the uid tree: for a group its parent group, for a resource
   * the group (or repo, for a tag) it lives in. `childrenOf` compares it.
   */
  parent: string;
  /**
   * The uid of the group the row is in (for a group, its own uid; for a tag, its repo's group,
   * kept on the row). `scope` checks it against the closure.
   */
  group: string;
  /** The exact-match column of the `name` filter. */
  name: string;
  /** The column of each sort field. */
  sort: Record<SortField, string>;
}

/** A WHERE condition over the table aliased `t`, with `?` placeholders, and its parameters. */
export interface ListClause {
  sql: string;
  params: (string | number)[];
}

const identifier = /^[a-z_][a-z0-9_]*$/;

/** Throw unless every name of `t` is a plain identifier: they are spliced into SQL text. */
export function checkIdentifiers(t: ListColumns): void {
  const names = [t.table, t.uid, t.parent, t.group, t.name, ...Object.values(t.sort)];
  const bad = names.find((n) => !identifier.test(n));
  if (bad !== undefined) throw new Error(`list SQL: ${JSON.stringify(bad)} is not an identifier`);
}

/** The keyset condition that resumes strictly after `q.after` in the query's order. */
export function cursorCondition(t: ListColumns, q: ListQuery<unknown>): ListClause {
  const after = q.after!;
  const op = q.order.desc ? "<" : ">";
  const col = t.sort[q.order.field];
  if (col === t.uid) return { sql: `t.${t.uid} ${op} ?`, params: [after.uid] };
  return { sql: `(t.${col}, t.${t.uid}) ${op} (?, ?)`, params: [after.value, after.uid] };
}

/** The ORDER BY list: the sort column, then uid, so that the order is total. */
export function orderBy(t: ListColumns, q: ListQuery<unknown>): string {
  const dir = q.order.desc ? "DESC" : "ASC";
  const col = t.sort[q.order.field];
  return col === t.uid ? `t.${t.uid} ${dir}` : `t.${col} ${dir}, t.${t.uid} ${dir}`;
}

/** The WHERE clause of some conditions, each parenthesized; empty for none. */
export function whereOf(conditions: readonly { sql: string }[]): string {
  return conditions.length === 0
    ? ""
    : ` WHERE ${conditions.map((c) => `(${c.sql})`).join(" AND ")}`;
}
