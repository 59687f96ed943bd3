import { isAtOrBelow } from "../uid.js";
import type { ListQuery, SortField } from "./vocabulary.js";

/**
 * Where a listable resource keeps what the list SQL of either backend needs. Names are code
 * constants (checked to be plain identifiers by `checkIdentifiers`), never user input.
 */
export interface ListColumns {
  table: string;
  /** The row's uid, a UIDP. */
  uid: string;
  /**
   * The row's parent in the uid tree: for a group its parent group, for a resource the group
   * (or repo, for a tag) it lives in. The `childrenOf` filter compares it with the parent's
   * uid, unless `childrenOf` below says otherwise.
   */
  parent: string;
  /**
   * The `childrenOf` condition, where `parent` holds something else than the parent's uid
   * (SQLite's groups keep their parent's integer id); by default `parent = uid`.
   */
  childrenOf?: (uid: string) => ListClause;
  /**
   * The uid of the group the row is in (for a group, its own uid; for a tag, its repo's group,
   * kept on the row). `scope` checks it against the closure.
   */
  group: string;
  /**
   * The row's group is always the first segment of its uid (an event: `<organization>/...`,
   * its `group` that organization): `scope` then compares that segment with the scope uids
   * instead of asking the closure. An index holding the uid answers it without reading the
   * row, so an events count over a time range reads only the (time, uid) index. The same
   * answer as the closure's: a root is at or below a scope uid only when it is that uid
   * (rootScopeCondition).
   */
  groupIsUidRoot?: boolean;
  /** The exact-match column of the `name` filter. */
  name: string;
  /**
   * The column of each sort field: the common ones (vocabulary.ts) and any other the table
   * stores in a column of its own. The list engine admits only the fields of this that its
   * resource's message has as scalars (src/list/sort-fields.ts).
   */
  sort: Readonly<Record<SortField, string>>;
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

/** The column of the query's sort field; one the table lacks is a bug (parse admits none). */
function sortColumn(t: ListColumns, q: ListQuery<unknown>): string {
  const col = Object.hasOwn(t.sort, q.order.field) ? t.sort[q.order.field] : undefined;
  if (col === undefined) throw new Error(`list SQL: ${t.table} has no sort field ${q.order.field}`);
  return col;
}

/** The keyset condition that resumes strictly after `q.after` in the query's order. */
export function cursorCondition(t: ListColumns, q: ListQuery<unknown>): ListClause {
  const after = q.after!;
  const op = q.order.desc ? "<" : ">";
  const col = sortColumn(t, q);
  if (col === t.uid) return { sql: `t.${t.uid} ${op} ?`, params: [after.uid] };
  return { sql: `(t.${col}, t.${t.uid}) ${op} (?, ?)`, params: [after.value, after.uid] };
}

/** The ORDER BY list: the sort column, then uid, so that the order is total. */
export function orderBy(t: ListColumns, q: ListQuery<unknown>): string {
  const dir = q.order.desc ? "DESC" : "ASC";
  const col = sortColumn(t, q);
  return col === t.uid ? `t.${t.uid} ${dir}` : `t.${col} ${dir}, t.${t.uid} ${dir}`;
}

/** The WHERE clause of some conditions, each parenthesized; empty for none. */
export function whereOf(conditions: readonly { sql: string }[]): string {
  return conditions.length === 0
    ? ""
    : ` WHERE ${conditions.map((c) => `(${c.sql})`).join(" AND ")}`;
}

/**
 * How a backend binds a list of uids as one parameter, so that the SQL has one shape for any
 * number of them: `match(column)` is the condition that `column` is one of them, with one `?`.
 */
export interface UidSet<P> {
  match(column: string): string;
  bind(uids: readonly string[]): P;
  /** The first segment of the uid in `column` (the whole uid when it has no `/`). */
  rootOf(column: string): string;
}

/**
 * The WHERE conditions of a query's filters, then the resource's `extra`: `descendantsOf`'s,
 * when present, comes first (SQLite's list SQL may write it another way).
 */
export function filterConditions<C extends { sql: string; params: unknown[] }, P>(
  t: ListColumns,
  q: ListQuery<unknown>,
  extra: readonly C[],
  uids: UidSet<P>,
): (C | ListClause | { sql: string; params: P[] })[] {
  const out: (ListClause | { sql: string; params: P[] })[] = [];
  if (q.descendantsOf !== undefined) out.push(descendantsCondition(t, q.descendantsOf));
  if (q.childrenOf !== undefined) {
    out.push(t.childrenOf?.(q.childrenOf) ?? { sql: `t.${t.parent} = ?`, params: [q.childrenOf] });
  }
  if (q.ancestorsOf !== undefined) {
    // The proper prefixes of the uid: none for a root uid, so nothing matches.
    out.push({
      sql: uids.match(`t.${t.uid}`),
      params: [uids.bind(strictAncestors(q.ancestorsOf))],
    });
  }
  // A uid without a parent has no `/` (UIDPs are hex segments joined by `/`).
  if (q.inRoot) out.push({ sql: `t.${t.uid} NOT LIKE '%/%'`, params: [] });
  if (q.ids !== undefined) {
    out.push({ sql: uids.match(`t.${t.uid}`), params: [uids.bind(q.ids)] });
  }
  if (q.name !== undefined) out.push({ sql: `t.${t.name} = ?`, params: [q.name] });
  // A tree filter at or below a scope uid already keeps every row in scope; the closure
  // subquery would only repeat it, at the cost of the whole subtree (111k rows: 0.5 s).
  const tree = q.descendantsOf ?? q.childrenOf;
  const scoped = tree !== undefined && q.scope?.some((s) => isAtOrBelow(tree, s)) === true;
  if (q.scope !== undefined && !scoped && t.groupIsUidRoot) {
    out.push(rootScopeCondition(t, q.scope, uids));
  } else if (q.scope !== undefined && !scoped) {
    out.push({
      sql: `t.${t.group} IN (SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.descendant
        WHERE c.ancestor IN (SELECT id FROM groups WHERE ${uids.match("uid")}))`,
      params: [uids.bind(q.scope)],
    });
  }
  return [...out, ...extra];
}

/** At most this many scope uids are written as uid ranges (one SQL shape per number). */
const maxScopeRanges = 8;

/**
 * The scope of a table whose rows' group is their uid's first segment (groupIsUidRoot): the
 * rows below a scope uid that is a root, as uid ranges, which the planner checks on an index
 * entry holding the uid (40,000 events' count: 6 ms, against 28 ms through a set of roots and
 * 42 ms reading each row's group). A scope uid below a root holds none of them, as through the
 * closure. Past a few roots, one set of them (one SQL shape for any number).
 */
function rootScopeCondition<P>(
  t: ListColumns,
  scope: readonly string[],
  uids: UidSet<P>,
): ListClause | { sql: string; params: P[] } {
  const roots = scope.filter((s) => !s.includes("/"));
  if (roots.length === 0) return { sql: "1 = 0", params: [] };
  if (roots.length > maxScopeRanges) {
    return { sql: uids.match(uids.rootOf(`t.${t.uid}`)), params: [uids.bind(roots)] };
  }
  const col = `t.${t.uid}`;
  return {
    sql: roots.map(() => `(${col} > ? AND ${col} < ?)`).join(" OR "),
    params: roots.flatMap((r) => [`${r}/`, `${r}0`]),
  };
}

/**
 * The uids strictly below `uid`: everything starting with `uid/`, the range between `uid/`
 * and `uid0` ('0' follows '/').
 */
function descendantsCondition(t: ListColumns, uid: string): ListClause {
  return { sql: `t.${t.uid} > ? AND t.${t.uid} < ?`, params: [`${uid}/`, `${uid}0`] };
}

/** The uids strictly above `uid` in the tree: `a/b/c` gives `a` and `a/b`. */
function strictAncestors(uid: string): string[] {
  const out: string[] = [];
  for (let i = uid.indexOf("/"); i >= 0; i = uid.indexOf("/", i + 1)) out.push(uid.slice(0, i));
  return out;
}
