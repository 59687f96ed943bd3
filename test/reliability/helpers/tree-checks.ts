import type { Database } from "better-sqlite3";
import pg from "pg";

/** A closure row: `descendant` lies `depth` levels below `ancestor`. */
export interface ClosureRow {
  ancestor: string;
  descendant: string;
  depth: number;
}

/**
 * A database the checks read, SQLite or PostgreSQL: plain SQL with `?` placeholders (written
 * in the dialect both share).
 */
export interface TreeDb {
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * A relation of every group's uid and parent_uid (NULL for a root): SQLite's groups keep
   * their parent's id, and its group_parents view reads it back as a uid.
   */
  groupParents: string;
  /** Rows that break a foreign key, by table (SQLite checks its keys only when asked). */
  foreignKeyViolations(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** The checks on an SQLite connection. */
export function sqliteTreeDb(db: Database): TreeDb {
  return {
    all: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).all(...params) as T[],
    groupParents: "group_parents",
    foreignKeyViolations: async () => {
      const found: Record<string, number> = {};
      for (const row of db.pragma("foreign_key_check") as { table: string }[]) {
        found[row.table] = (found[row.table] ?? 0) + 1;
      }
      return found;
    },
    close: async () => undefined,
  };
}

/** The checks on a PostgreSQL database, by URL (PostgreSQL enforces its keys on every write). */
export async function pgTreeDb(url: string): Promise<TreeDb> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    all: async <T>(sql: string, params: unknown[] = []) => {
      let n = 0;
      const text = sql.replace(/\?/g, () => `$${++n}`);
      return (await client.query(text, params)).rows as T[];
    },
    groupParents: "groups",
    foreignKeyViolations: async () => ({}),
    close: () => client.end(),
  };
}

// The closure the parent links imply: every group at depth 0 below itself, and one level
// deeper below each ancestor of its parent.
const impliedClosure = (db: TreeDb) => `
  WITH RECURSIVE implied(ancestor, descendant, depth) AS (
    SELECT uid, uid, 0 FROM groups
    UNION ALL
    SELECT g.parent_uid, i.descendant, i.depth + 1
    FROM implied AS i JOIN ${db.groupParents} AS g ON g.uid = i.ancestor
    WHERE g.parent_uid IS NOT NULL
  )`;

/**
 * Compare group_closure with the closure recomputed from the groups' parent links: the rows
 * it lacks and the rows it has beyond them (at most 20 of each, for the failure message).
 */
export async function closureDiff(
  db: TreeDb,
): Promise<{ missing: ClosureRow[]; extra: ClosureRow[] }> {
  const cols = "ancestor, descendant, depth";
  const missing = await db.all<ClosureRow>(
    `${impliedClosure(db)} SELECT ${cols} FROM implied EXCEPT SELECT ${cols} FROM group_closure_by_uid LIMIT 20`,
  );
  const extra = await db.all<ClosureRow>(
    `${impliedClosure(db)} SELECT ${cols} FROM group_closure_by_uid EXCEPT SELECT ${cols} FROM implied LIMIT 20`,
  );
  return { missing, extra };
}

/** `PRAGMA integrity_check`'s lines: `["ok"]` for a sound file. */
export function integrityCheck(db: Database): string[] {
  return (db.pragma("integrity_check") as { integrity_check: string }[]).map(
    (r) => r.integrity_check,
  );
}

/**
 * Rows that point at something that is gone: every foreign key violation (closure rows and
 * bindings of deleted groups among them), and groups whose parent is gone, listed by table.
 * On SQLite a gone parent is a foreign key violation of `groups` (parent_id): its view reads
 * the parent back as NULL, so the query below finds nothing there.
 */
export async function orphans(db: TreeDb): Promise<Record<string, number>> {
  const found = await db.foreignKeyViolations();
  const [lost] = await db.all<{ n: number | string }>(
    `SELECT count(*) AS n FROM ${db.groupParents} AS g
     WHERE g.parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups AS p WHERE p.uid = g.parent_uid)`,
  );
  if (Number(lost?.n) > 0) found["groups (parent gone)"] = Number(lost?.n);
  return found;
}

/**
 * Groups whose kept descendant count differs from the count of their closure rows below them
 * (at most 20, for the failure message).
 */
export async function countDiff(
  db: TreeDb,
): Promise<{ uid: string; kept: number; actual: number }[]> {
  const rows = await db.all<{ uid: string; kept: number | string; actual: number | string }>(
    `SELECT * FROM (
       SELECT g.uid, g.descendant_count AS kept,
         (SELECT COUNT(*) FROM group_closure AS c WHERE c.ancestor = g.id AND c.depth > 0)
           AS actual
       FROM groups AS g) AS counts
     WHERE kept <> actual LIMIT 20`,
  );
  return rows.map((r) => ({ uid: r.uid, kept: Number(r.kept), actual: Number(r.actual) }));
}
