import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { type RoleRow, roleListColumns, roleRecordOf, sameSet } from "../rows/role-rows.js";
import { type ListQuery, StoreError, type StoreRoles } from "../store.js";
import { createPgListSql, type PgCondition } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The role operations of the PostgreSQL store. */
export type PgRoleOps = PgOps<
  "createRole" | "getRole" | "updateRole" | "deleteRole" | "listRoles"
> & {
  /**
   * Upsert `builtins` (and replace their capabilities when the catalog changed), so the access
   * queries treat built-in and custom roles alike. Run at every open; replicas opening at once
   * are safe (the upsert, or a serialization retry, settles their race).
   */
  seedBuiltins(): Promise<void>;
};

/** Create the role operations on a migrated database; `now` is the create time of new built-ins. */
export function createPgRoleOps(
  db: PgDb,
  builtins: StoreRoles["builtins"],
  now: number,
): PgRoleOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<RoleRow<string[]>>("SELECT * FROM roles_view WHERE uid = $1", [uid]);
  const mustFindCustom = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `role ${JSON.stringify(uid)}`);
    if (row.builtin) {
      throw new StoreError("failed_precondition", "built-in roles cannot be changed or deleted");
    }
    return row;
  };
  const setCapabilities = async (sql: Sql, uid: string, caps: readonly string[]) => {
    await sql.run("DELETE FROM role_capabilities WHERE role_uid = $1", [uid]);
    await sql.run(
      `INSERT INTO role_capabilities (role_uid, capability)
       SELECT DISTINCT $1::text, c FROM unnest($2::text[]) AS c`,
      [uid, caps],
    );
  };
  const update = (sql: Sql, uid: string, name: string, description: string, time: number) =>
    sql.run("UPDATE roles SET name = $1, description = $2, update_time = $3 WHERE uid = $4", [
      name,
      description,
      time,
      uid,
    ]);
  const lists = createPgListSql<RoleRow>(db, roleListColumns);

  return {
    seedBuiltins: () =>
      db.write(async (sql) => {
        for (const b of builtins) {
          const row = await find(sql, b.uid);
          if (
            row &&
            row.name === b.name &&
            row.description === b.description &&
            sameSet(row.capabilities, b.capabilities)
          ) {
            continue;
          }
          // Another replica may insert it first: then this one updates (the same values).
          await sql.run(
            `INSERT INTO roles (uid, group_uid, name, description, builtin, create_time, update_time)
             VALUES ($1, NULL, $2, $3, true, $4, $4)
             ON CONFLICT (uid) DO UPDATE SET name = EXCLUDED.name,
               description = EXCLUDED.description, update_time = EXCLUDED.update_time`,
            [b.uid, b.name, b.description, now],
          );
          await setCapabilities(sql, b.uid, b.capabilities);
        }
      }),

    createRole: (r) =>
      db.write(async (sql) => {
        if (parentOf(r.uid) !== r.groupUid || r.groupUid === "") {
          throw new Error(`role uid ${r.uid} is not a direct child of ${r.groupUid}`);
        }
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [r.groupUid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(r.groupUid)}`);
        }
        if (await find(sql, r.uid)) {
          throw new StoreError("already_exists", `role ${JSON.stringify(r.uid)}`);
        }
        await sql.run(
          `INSERT INTO roles (uid, group_uid, name, description, builtin, create_time, update_time)
           VALUES ($1, $2, $3, $4, false, $5, $5)`,
          [r.uid, r.groupUid, r.name, r.description, r.now],
        );
        await setCapabilities(sql, r.uid, r.capabilities);
        return roleRecordOf((await find(sql, r.uid))!);
      }),

    getRole: async (uid) => {
      const row = await find(db.sql, uid);
      return row && roleRecordOf(row);
    },

    updateRole: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await mustFindCustom(sql, uid);
        if (isEmptyPatch(patch)) return roleRecordOf(row);
        await update(sql, uid, patch.name ?? row.name, patch.description ?? row.description, now);
        if (patch.capabilities) await setCapabilities(sql, uid, patch.capabilities);
        return roleRecordOf((await find(sql, uid))!);
      }),

    deleteRole: (uid) =>
      db.write(async (sql) => {
        await mustFindCustom(sql, uid);
        if (await sql.one("SELECT 1 FROM role_bindings WHERE role_uid = $1 LIMIT 1", [uid])) {
          throw new StoreError(
            "failed_precondition",
            "the role is still bound; delete its bindings",
          );
        }
        // Its capabilities and its invites go with it (ON DELETE CASCADE).
        await sql.run("DELETE FROM roles WHERE uid = $1", [uid]);
      }),

    listRoles: async (query) => {
      const { scope, ...rest } = query;
      const page = await lists.list(rest, scope === undefined ? [] : [roleScope(scope)]);
      return { items: page.rows.map(roleRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

/**
 * A role is visible from a scope group when it is built-in, or when its group is at or below
 * the scope group (it is defined there), or above it (it is usable there). Nothing is visible
 * from an empty scope.
 */
function roleScope(scope: NonNullable<ListQuery["scope"]>): PgCondition {
  const groups = [...scope];
  return {
    sql: `cardinality(?::text[]) > 0 AND (t.group_uid IS NULL OR t.group_uid IN (
      SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.descendant
        WHERE c.ancestor IN (SELECT id FROM groups WHERE uid = ANY(?::text[]))
      UNION SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
        WHERE c.descendant IN (SELECT id FROM groups WHERE uid = ANY(?::text[]))))`,
    params: [groups, groups, groups],
  };
}
