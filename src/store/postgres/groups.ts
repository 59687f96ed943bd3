import { parentOf, rootOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import {
  childChecks,
  groupListColumns,
  groupRecordOf,
  type GroupRow as StoredGroupRow,
} from "../rows/group-rows.js";
import { type GroupRecord, type NewGroup, StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The group operations of the PostgreSQL store: the tree and its closure rows. */
export type PgGroupOps = PgOps<
  | "createGroup"
  | "getGroup"
  | "updateGroup"
  | "deleteGroup"
  | "getGroupPath"
  | "listGroups"
  | "findOrganization"
> & {
  /** createGroup's statements, for createOrganization's own transaction. */
  createGroupIn(sql: Sql, g: NewGroup): Promise<GroupRecord>;
};

/** A groups row with the id the closure table refers to. */
type GroupRow = StoredGroupRow & { id: number };

// The child checks with pg's placeholder for their one parameter.
const pgChildChecks = childChecks.map((c) => ({ kind: c.kind, sql: c.sql.replace("?", "$1") }));

/** Create the group operations on a migrated database. */
export function createPgGroupOps(db: PgDb): PgGroupOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<GroupRow>("SELECT * FROM groups WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `group ${JSON.stringify(uid)}`);
    return row;
  };
  const checkSiblingName = async (sql: Sql, parent: string | null, name: string, self: string) => {
    if (
      parent !== null &&
      (await sql.one(
        "SELECT 1 FROM groups WHERE parent_uid = $1 AND name = $2 AND uid <> $3 LIMIT 1",
        [parent, name, self],
      ))
    ) {
      throw new StoreError("already_exists", `a sibling group is named ${JSON.stringify(name)}`);
    }
  };
  // Each group counts the groups strictly below it.
  const countAbove = (sql: Sql, id: number, delta: number) =>
    sql.run(
      `UPDATE groups SET descendant_count = descendant_count + $2
       WHERE id IN (SELECT ancestor FROM group_closure WHERE descendant = $1 AND depth > 0)`,
      [id, delta],
    );

  const lists = createPgListSql<GroupRow>(db, {
    ...groupListColumns,
    below: async (sql, uid) =>
      (
        await sql.one<{ n: number }>("SELECT descendant_count AS n FROM groups WHERE uid = $1", [
          uid,
        ])
      )?.n ?? 0,
  });

  // Two statements, not six: every statement is a round trip to the database. The checks
  // first, in the order SQLite makes them; then the row, its closure rows and the counts of
  // the groups above it, in one statement (the parent's closure rows are the new group's
  // ancestors, one level further).
  async function createGroupIn(sql: Sql, g: NewGroup): Promise<GroupRecord> {
    checkUidExtendsParent(g.uid, g.parentUid);
    const parent = g.parentUid === "" ? null : g.parentUid;
    const found = (await sql.one<{ taken: boolean; parent_id: number | null; sibling: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM groups WHERE uid = $1) AS taken,
         (SELECT id FROM groups WHERE uid = $2) AS parent_id,
         EXISTS (SELECT 1 FROM groups WHERE parent_uid = $2 AND name = $3 AND uid <> $1) AS sibling`,
      [g.uid, parent, g.name],
    ))!;
    if (found.taken) throw new StoreError("already_exists", `group ${JSON.stringify(g.uid)}`);
    if (parent !== null && found.parent_id === null) {
      throw new StoreError("not_found", `group ${JSON.stringify(parent)}`);
    }
    if (found.sibling) {
      throw new StoreError("already_exists", `a sibling group is named ${JSON.stringify(g.name)}`);
    }
    const row = (await sql.one<GroupRow>(
      `WITH g AS (
         INSERT INTO groups (uid, parent_uid, name, description, create_time, update_time)
         VALUES ($1, $2, $3, $4, $5, $5) RETURNING *
       ), closure AS (
         INSERT INTO group_closure (ancestor, descendant, depth)
         SELECT c.ancestor, g.id, c.depth + 1 FROM group_closure AS c, g WHERE c.descendant = $6
         UNION ALL SELECT g.id, g.id, 0 FROM g
       ), counts AS (
         UPDATE groups SET descendant_count = descendant_count + 1
         WHERE id IN (SELECT ancestor FROM group_closure WHERE descendant = $6)
       )
       SELECT * FROM g`,
      [g.uid, parent, g.name, g.description, g.now, found.parent_id],
    ))!;
    return groupRecordOf(row);
  }

  return {
    createGroupIn,
    // One organization's tree changes one writer at a time (see TxOptions.turnKey).
    createGroup: (g) => db.write((sql) => createGroupIn(sql, g), { turnKey: rootOf(g.uid) }),

    getGroup: async (uid) => {
      const row = await find(db.sql, uid);
      return row && groupRecordOf(row);
    },

    findOrganization: async (name) => {
      const [row] = await db.sql.rows<GroupRow>(
        `SELECT * FROM groups WHERE name = $1 AND parent_uid IS NULL
         ORDER BY create_time, uid LIMIT 1`,
        [name],
      );
      return row && groupRecordOf(row);
    },

    updateGroup: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await mustFind(sql, uid);
        if (isEmptyPatch(patch)) return groupRecordOf(row);
        const name = patch.name ?? row.name;
        if (name !== row.name) await checkSiblingName(sql, row.parent_uid, name, uid);
        const updated = await sql.one<GroupRow>(
          "UPDATE groups SET name = $1, description = $2, update_time = $3 WHERE uid = $4 RETURNING *",
          [name, patch.description ?? row.description, now, uid],
        );
        return groupRecordOf(updated!);
      }),

    deleteGroup: (uid) =>
      db.write(
        async (sql) => {
          const row = await mustFind(sql, uid);
          for (const { kind, sql: text } of pgChildChecks) {
            if (await sql.one(text, [uid])) {
              throw new StoreError(
                "not_empty",
                `group ${JSON.stringify(uid)} has child ${kind}`,
                kind,
                "group",
              );
            }
          }
          await sql.run("DELETE FROM role_bindings WHERE group_uid = $1", [uid]);
          await sql.run("DELETE FROM account_associations WHERE uid = $1", [uid]);
          await sql.run("DELETE FROM group_invites WHERE group_uid = $1", [uid]);
          await sql.run("DELETE FROM advisories WHERE group_uid = $1", [uid]);
          await countAbove(sql, row.id, -1);
          await sql.run("DELETE FROM group_closure WHERE descendant = $1 OR ancestor = $1", [
            row.id,
          ]);
          await sql.run("DELETE FROM groups WHERE uid = $1", [uid]);
        },
        { turnKey: rootOf(uid) },
      ),

    getGroupPath: async (uid) =>
      (
        await db.sql.rows<{ uid: string }>(
          `SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
           WHERE c.descendant = (SELECT id FROM groups WHERE uid = $1) ORDER BY c.depth DESC`,
          [uid],
        )
      ).map((r) => r.uid),

    listGroups: async (query) => {
      const page = await lists.list(query);
      return { items: page.rows.map(groupRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

/** Refuse a uid that does not extend its parent's: the list SQL's uid ranges rely on it. */
function checkUidExtendsParent(uid: string, parentUid: string): void {
  if (parentOf(uid) !== parentUid) {
    throw new Error(`group uid ${uid} is not a direct child of ${JSON.stringify(parentUid)}`);
  }
}
