import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { childChecks, type GroupRow, groupListColumns, groupRecordOf } from "../rows/group-rows.js";
import { type GroupPatch, type NewGroup, StoreError } from "../store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The group operations of the SQLite store: the tree and its closure rows. */
export type GroupOps = SyncOps<
  | "createGroup"
  | "getGroup"
  | "updateGroup"
  | "deleteGroup"
  | "getGroupPath"
  | "listGroups"
  | "findOrganization"
>;

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

/**
 * What keeps a group from being deleted, with the child groups found by parent id: that
 * check's `?` is the group's integer id, the others' its uid.
 */
const sqliteChildChecks = childChecks.map((c) =>
  c.kind === "groups"
    ? { kind: c.kind, sql: "SELECT 1 FROM groups WHERE parent_id = ? LIMIT 1", byId: true }
    : { ...c, byId: false },
);

/** Create the group operations on an open, migrated database. */
export function createGroupOps(db: Database): GroupOps {
  const get = db.prepare("SELECT * FROM groups WHERE uid = ?");
  const sibling = db.prepare(
    "SELECT 1 FROM groups WHERE parent_id = ? AND name = ? AND id <> ? LIMIT 1",
  );
  const oldestRoot = db.prepare(
    "SELECT * FROM groups WHERE name = ? AND parent_id IS NULL ORDER BY create_time, uid LIMIT 1",
  );
  const idOf = db.prepare("SELECT id FROM groups WHERE uid = ?").pluck();
  // A group's integer id is its rowid: SQLite picks the next one after the largest.
  const insert = db.prepare(
    `INSERT INTO groups (uid, parent_id, name, description, create_time, update_time)
     VALUES (@uid, @parentId, @name, @description, @now, @now)`,
  );
  // The new group is at depth d+1 below each ancestor of its parent (d = 0: the parent itself),
  // and at depth 0 below itself. A root has no parent rows, so it gets only the latter.
  const insertClosure = db.prepare(
    `INSERT INTO group_closure (ancestor, descendant, depth)
     SELECT ancestor, @id, depth + 1 FROM group_closure WHERE descendant = @parentId
     UNION ALL SELECT @id, @id, 0`,
  );
  // Each group counts the groups strictly below it: a group that comes (after its closure
  // rows) or goes (before them; always a leaf) changes the count of every group above it.
  const countAbove = db.prepare(
    `UPDATE groups SET descendant_count = descendant_count + @delta
     WHERE id IN (SELECT ancestor FROM group_closure WHERE descendant = @id AND depth > 0)`,
  );
  const below = db.prepare("SELECT descendant_count FROM groups WHERE uid = ?").pluck();
  // How many groups there are, at most: ids are distinct positive integers, so the largest
  // is at least the count (deletes leave gaps), and it is read from the table's last row,
  // whatever the number of organizations, where summing the roots' counts read every root.
  // An overestimate only makes the list SQL sort where walking would have done.
  const all = db.prepare("SELECT COALESCE(MAX(id), 0) FROM groups").pluck();
  const update = db.prepare(
    "UPDATE groups SET name = ?, description = ?, update_time = ? WHERE id = ?",
  );
  const childStatements = sqliteChildChecks.map((c) => ({
    kind: c.kind,
    byId: c.byId,
    stmt: db.prepare(c.sql),
  }));
  // A group can only be deleted as a leaf, so its only row as an ancestor is its depth-0 row.
  const deleteClosure = db.prepare(
    "DELETE FROM group_closure WHERE descendant = @id OR ancestor = @id",
  );
  // Bindings at the group go with it (those of its identities and roles block the delete).
  const removeBindings = db.prepare("DELETE FROM role_bindings WHERE group_uid = ?");
  // The account association shares the group's uid: it is the group's, and goes with it.
  const removeAssociation = db.prepare("DELETE FROM account_associations WHERE uid = ?");
  const removeInvites = db.prepare("DELETE FROM group_invites WHERE group_uid = ?");
  // Advisories are data about a group, imported for it: they go with it, as bindings do, so
  // that an owner (who holds no advisory write capability) can always delete their groups.
  const removeAdvisories = db.prepare("DELETE FROM advisories WHERE group_uid = ?");
  const remove = db.prepare("DELETE FROM groups WHERE id = ?");
  const path = db
    .prepare(
      `SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
       WHERE c.descendant = (SELECT id FROM groups WHERE uid = ?) ORDER BY c.depth DESC`,
    )
    .pluck();
  const lists = createListSql<SqliteGroupRow>(db, {
    ...listColumns,
    treeCounts: {
      below: (uid) => (below.get(uid) as number | undefined) ?? 0,
      all: () => all.get() as number,
    },
  });

  const find = (uid: string) => get.get(uid) as SqliteGroupRow | undefined;
  const checkSiblingName = (parentId: number | null, name: string, self: number) => {
    if (parentId !== null && sibling.get(parentId, name, self)) {
      throw new StoreError("already_exists", `a sibling group is named ${JSON.stringify(name)}`);
    }
  };

  return {
    createGroup: db.transaction((g: NewGroup) => {
      checkUidExtendsParent(g.uid, g.parentUid);
      if (find(g.uid)) throw new StoreError("already_exists", `group ${JSON.stringify(g.uid)}`);
      let parentId: number | null = null;
      if (g.parentUid !== "") {
        parentId = (idOf.get(g.parentUid) as number | undefined) ?? null;
        if (parentId === null) {
          throw new StoreError("not_found", `group ${JSON.stringify(g.parentUid)}`);
        }
      }
      checkSiblingName(parentId, g.name, 0);
      const { lastInsertRowid } = insert.run({
        uid: g.uid,
        parentId,
        name: g.name,
        description: g.description,
        now: g.now,
      });
      const id = Number(lastInsertRowid);
      insertClosure.run({ id, parentId });
      countAbove.run({ id, delta: 1 });
      return recordOf(find(g.uid)!);
    }).immediate,

    getGroup: (uid) => {
      const row = find(uid);
      return row && recordOf(row);
    },

    findOrganization: (name) => {
      const row = oldestRoot.get(name) as SqliteGroupRow | undefined;
      return row && recordOf(row);
    },

    updateGroup: db.transaction((uid: string, patch: GroupPatch, now: number) => {
      const row = mustFind(uid);
      if (isEmptyPatch(patch)) return recordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) checkSiblingName(row.parent_id, name, row.id);
      update.run(name, patch.description ?? row.description, now, row.id);
      return recordOf(find(uid)!);
    }).immediate,

    deleteGroup: db.transaction((uid: string) => {
      const { id } = mustFind(uid);
      for (const { kind, byId, stmt } of childStatements) {
        if (stmt.get(byId ? id : uid)) {
          throw new StoreError(
            "not_empty",
            `group ${JSON.stringify(uid)} has child ${kind}`,
            kind,
            "group",
          );
        }
      }
      removeBindings.run(uid);
      removeAssociation.run(uid);
      removeInvites.run(uid);
      removeAdvisories.run(uid);
      countAbove.run({ id, delta: -1 });
      deleteClosure.run({ id });
      remove.run(id);
    }).immediate,

    getGroupPath: (uid) => path.all(uid) as string[],

    listGroups: (query) => {
      const page = lists.list(query);
      return { items: page.rows.map(recordOf), total: page.total, hasMore: page.hasMore };
    },
  };

  function mustFind(uid: string): SqliteGroupRow {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `group ${JSON.stringify(uid)}`);
    return row;
  }
}

/** Refuse a uid that does not extend its parent's: the list SQL's uid ranges rely on it. */
function checkUidExtendsParent(uid: string, parentUid: string): void {
  if (parentOf(uid) !== parentUid) {
    throw new Error(`group uid ${uid} is not a direct child of ${JSON.stringify(parentUid)}`);
  }
}
