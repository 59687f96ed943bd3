import type { Database } from "better-sqlite3";

/** A closure row: `descendant` lies `depth` levels below `ancestor`. */
export interface ClosureRow {
  ancestor: string;
  descendant: string;
  depth: number;
}

// The closure the parent links imply: every group at depth 0 below itself, and one level
// deeper below each ancestor of its parent.
const impliedClosure = `
  WITH RECURSIVE implied(ancestor, descendant, depth) AS (
    SELECT uid, uid, 0 FROM groups
    UNION ALL
    SELECT g.parent_uid, i.descendant, i.depth + 1
    FROM implied AS i JOIN groups AS g ON g.uid = i.ancestor
    WHERE g.parent_uid IS NOT NULL
  )`;

/**
 * Compare group_closure with the closure recomputed from the groups' parent links: the rows
 * it lacks and the rows it has beyond them (at most 20 of each, for the failure message).
 */
export function closureDiff(db: Database): { missing: ClosureRow[]; extra: ClosureRow[] } {
  const cols = "ancestor, descendant, depth";
  const missing = db
    .prepare(
      `${impliedClosure} SELECT ${cols} FROM implied EXCEPT SELECT ${cols} FROM group_closure_by_uid LIMIT 20`,
    )
    .all() as ClosureRow[];
  const extra = db
    .prepare(
      `${impliedClosure} SELECT ${cols} FROM group_closure_by_uid EXCEPT SELECT ${cols} FROM implied LIMIT 20`,
    )
    .all() as ClosureRow[];
  return { missing, extra };
}

/** `PRAGMA integrity_check`'s lines: `["ok"]` for a sound file. */
export function integrityCheck(db: Database): string[] {
  return (db.pragma("integrity_check") as { integrity_check: string }[]).map(
    (r) => r.integrity_check,
  );
}

/**
 * Rows that point at something that is gone: every foreign key violation
 * (`PRAGMA foreign_key_check`: closure rows and bindings of deleted groups among them), and
 * groups whose parent is gone, listed by table.
 */
export function orphans(db: Database): Record<string, number> {
  const found: Record<string, number> = {};
  for (const row of db.pragma("foreign_key_check") as { table: string }[]) {
    found[row.table] = (found[row.table] ?? 0) + 1;
  }
  const lost = db
    .prepare(
      `SELECT count(*) AS n FROM groups AS g
       WHERE g.parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups AS p WHERE p.uid = g.parent_uid)`,
    )
    .get() as { n: number };
  if (lost.n > 0) found["groups (parent gone)"] = lost.n;
  return found;
}

/**
 * Groups whose kept descendant count differs from the count of their closure rows below them
 * (at most 20, for the failure message).
 */
export function countDiff(db: Database): { uid: string; kept: number; actual: number }[] {
  return db
    .prepare(
      `SELECT g.uid, g.descendant_count AS kept,
         (SELECT COUNT(*) FROM group_closure AS c WHERE c.ancestor = g.id AND c.depth > 0)
           AS actual
       FROM groups AS g WHERE kept <> actual LIMIT 20`,
    )
    .all() as { uid: string; kept: number; actual: number }[];
}
