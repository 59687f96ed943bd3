import { parentOf, rootOf } from "../../uid.js";
import {
  groupListColumns,
  groupRecordOf,
  type GroupRow as StoredGroupRow,
} from "../rows/group-rows.js";
import { type GroupRecord, type NewGroup, notFoundError, StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/**
 * The group operations PostgreSQL writes on its own: createGroup (checks, then the row, its
 * closure rows and the counts above it in one CTE: two round trips where SQLite's statements
 * would be six) and listGroups (its list engine reads the subtree counts). The others are
 * ops/groups.ts.
 */
export type PgGroupOps = PgOps<"createGroup" | "listGroups"> & {
  /** createGroup's statements, for createOrganization's own transaction. */
  createGroupIn(sql: Sql, g: NewGroup): Promise<GroupRecord>;
};

/** A groups row with the id the closure table refers to. */
type GroupRow = StoredGroupRow & { id: number };

/** Create the group operations on a migrated database. */
export function createPgGroupOps(db: PgDb): PgGroupOps {
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
      throw notFoundError("group", parent);
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
       ), claim AS (
         -- An organization takes its name's registry namespace if nobody holds it, spaces
         -- as '-' (registryComponentOf in ops/registry-namespaces.ts).
         INSERT INTO registry_namespaces (name, org_uid, claim_time)
         SELECT replace(g.name, ' ', '-'), g.uid, g.create_time FROM g WHERE g.parent_uid IS NULL
         ON CONFLICT (name) DO NOTHING
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
