import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import { claimNamespaceSql, registryComponentOf } from "../ops/registry-namespaces.js";
import { type GroupRow, groupListColumns, groupRecordOf } from "../rows/group-rows.js";
import { type NewGroup, notFoundError, StoreError } from "../store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/**
 * The group operations SQLite writes on its own: createGroup (its statements, where
 * PostgreSQL's is one CTE; also the createGroup hook of shared operations) and listGroups (the
 * list engine walks or sorts by the subtree counts). The others are ops/groups.ts.
 */
export type GroupOps = SyncOps<"createGroup" | "listGroups">;

/**
 * A groups row as SQLite keeps it: the parent is its integer id (`parent_id`), and the
 * parent's uid is the row's uid less its last segment (createGroup refuses any other).
 */
type SqliteGroupRow = Omit<GroupRow, "parent_uid"> & { id: number; parent_id: number | null };

/** The record of a stored group, its parent's uid taken from its own. */
function recordOf(row: SqliteGroupRow) {
  return groupRecordOf({ ...row, parent_uid: parentOf(row.uid) || null });
}

/**
 * The SQLite list columns of groups: the parent is an id, so `childrenOf` looks the parent's
 * id up by uid and reads the (parent_id, name) index.
 */
const listColumns = {
  ...groupListColumns,
  parent: "parent_id",
  childrenOf: (uid: string) => ({
    sql: "t.parent_id = (SELECT id FROM groups WHERE uid = ?)",
    params: [uid],
  }),
};

/** Create the group operations on an open, migrated database. */
export function createGroupOps(db: Database): GroupOps {
  const exists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const sibling = db.prepare("SELECT 1 FROM groups WHERE parent_id = ? AND name = ? LIMIT 1");
  const idOf = db.prepare("SELECT id FROM groups WHERE uid = ?").pluck();
  // A group's integer id is its rowid: SQLite picks the next one after the largest. The row
  // comes back as written (RETURNING): the closure and count statements after it change only
  // the groups above it.
  const insert = db.prepare(
    `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
     VALUES (@uid, @parentId, @name, @description, @now, @now) RETURNING *`,
  );
  // The new group is at depth d+1 below each ancestor of its parent (d = 0: the parent itself),
  // and at depth 0 below itself. A root has no parent rows, so it gets only the latter.
  const insertClosure = db.prepare(
    `INSERT INTO group_closure (ancestor, descendant, depth)
     SELECT ancestor, @id, depth + 1 FROM group_closure WHERE descendant = @parentId
     UNION ALL SELECT @id, @id, 0`,
  );
  // Each group counts the groups strictly below it: a group that comes (after its closure
  // rows) raises the count of every group above it (deleteGroup lowers them: ops/groups.ts).
  const countAbove = db.prepare(
    `UPDATE groups SET descendant_count = descendant_count + 1
     WHERE id IN (SELECT ancestor FROM group_closure WHERE descendant = @id AND depth > 0)`,
  );
  // An organization takes its name's registry namespace if nobody holds it.
  const claim = db.prepare(claimNamespaceSql);
  const below = db.prepare("SELECT descendant_count FROM groups WHERE uid = ?").pluck();
  // How many groups there are, at most: ids are distinct positive integers, so the largest
  // is at least the count (deletes leave gaps), and it is read from the table's last row,
  // whatever the number of organizations, where summing the roots' counts read every root.
  // An overestimate only makes the list SQL sort where walking would have done.
  const all = db.prepare("SELECT COALESCE(MAX(id), 0) FROM groups").pluck();
  const lists = createListSql<SqliteGroupRow>(db, {
    ...listColumns,
    treeCounts: {
      below: (uid) => (below.get(uid) as number | undefined) ?? 0,
      all: () => all.get() as number,
    },
  });

  const checkSiblingName = (parentId: number | null, name: string) => {
    if (parentId !== null && sibling.get(parentId, name)) {
      throw new StoreError("already_exists", `a sibling group is named ${JSON.stringify(name)}`);
    }
  };

  return {
    createGroup: db.transaction((g: NewGroup) => {
      checkUidExtendsParent(g.uid, g.parentUid);
      if (exists.get(g.uid))
        throw new StoreError("already_exists", `group ${JSON.stringify(g.uid)}`);
      let parentId: number | null = null;
      if (g.parentUid !== "") {
        parentId = (idOf.get(g.parentUid) as number | undefined) ?? null;
        if (parentId === null) {
          throw notFoundError("group", g.parentUid);
        }
      }
      checkSiblingName(parentId, g.name);
      const row = insert.get({
        uid: g.uid,
        parentId,
        name: g.name,
        description: g.description,
        now: g.now,
      }) as SqliteGroupRow;
      insertClosure.run({ id: row.id, parentId });
      countAbove.run({ id: row.id });
      if (parentId === null) claim.run(registryComponentOf(g.name), g.uid, g.now);
      return recordOf(row);
    }).immediate,

    listGroups: (query) => {
      const page = lists.list(query);
      return { items: page.rows.map(recordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

/** Refuse a uid that does not extend its parent's: the list SQL's uid ranges rely on it. */
function checkUidExtendsParent(uid: string, parentUid: string): void {
  if (parentOf(uid) !== parentUid) {
    throw new Error(`group uid ${uid} is not a direct child of ${JSON.stringify(parentUid)}`);
  }
}
