import { parentOf } from "../../uid.js";
import type { NewRoleBinding, RoleBindingRecord } from "../iam-store.js";
import {
  type BindingRow,
  roleBindingConditions,
  roleBindingListColumns,
  roleBindingRecordOf,
} from "../rows/role-binding-rows.js";
import { type GroupRecord, type NewGroup, StoreError } from "../store.js";
import type { PgLastOwnerGuard } from "./last-owner.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The role-binding operations of the PostgreSQL store, and organization creation. */
export type PgRoleBindingOps = PgOps<
  | "createRoleBinding"
  | "getRoleBinding"
  | "updateRoleBinding"
  | "deleteRoleBinding"
  | "listRoleBindings"
  | "createOrganization"
> & {
  /** getRoleBinding inside another operation's transaction. */
  getRoleBindingIn(sql: Sql, uid: string): Promise<RoleBindingRecord | undefined>;
};

// What must exist before a binding refers to it, by kind.
const existence = {
  group: "SELECT 1 FROM groups WHERE uid = $1",
  identity: "SELECT 1 FROM identities WHERE uid = $1",
  role: "SELECT 1 FROM roles WHERE uid = $1",
  binding: "SELECT 1 FROM role_bindings WHERE uid = $1",
} as const;

/**
 * Create the role-binding operations on a migrated database. `createGroupIn` is the group
 * creation, which createOrganization runs in its own transaction.
 */
export function createPgRoleBindingOps(
  db: PgDb,
  createGroupIn: (sql: Sql, g: NewGroup) => Promise<GroupRecord>,
  lastOwner: PgLastOwnerGuard,
): PgRoleBindingOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<BindingRow>("SELECT * FROM role_bindings_view WHERE uid = $1", [uid]);
  const exists = async (sql: Sql, kind: keyof typeof existence, uid: string) =>
    (await sql.one(existence[kind], [uid])) !== undefined;
  const mustExist = async (sql: Sql, kind: keyof typeof existence, uid: string) => {
    if (!(await exists(sql, kind, uid))) {
      throw new StoreError("not_found", `${kind} ${JSON.stringify(uid)}`);
    }
  };
  const checkUnique = async (
    sql: Sql,
    identityUid: string,
    groupUid: string,
    roleUid: string,
    self: string,
  ) => {
    if (
      await sql.one(
        `SELECT 1 FROM role_bindings
         WHERE identity_uid = $1 AND group_uid = $2 AND role_uid = $3 AND uid <> $4`,
        [identityUid, groupUid, roleUid, self],
      )
    ) {
      throw new StoreError("already_exists", "the identity already has this role at this group");
    }
  };
  const bind = async (sql: Sql, b: NewRoleBinding) => {
    if (parentOf(b.uid) !== b.groupUid || b.groupUid === "") {
      throw new Error(`role binding uid ${b.uid} is not a direct child of ${b.groupUid}`);
    }
    await mustExist(sql, "group", b.groupUid);
    await mustExist(sql, "identity", b.identityUid);
    await mustExist(sql, "role", b.roleUid);
    if (await exists(sql, "binding", b.uid)) {
      throw new StoreError("already_exists", `role binding ${JSON.stringify(b.uid)}`);
    }
    await checkUnique(sql, b.identityUid, b.groupUid, b.roleUid, b.uid);
    await sql.run(
      `INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time, update_time)
       VALUES ($1, $2, $3, $4, $5, $5)`,
      [b.uid, b.groupUid, b.identityUid, b.roleUid, b.now],
    );
  };
  const getRoleBindingIn = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    return row && roleBindingRecordOf(row);
  };
  const lists = createPgListSql<BindingRow>(db, roleBindingListColumns);

  return {
    getRoleBindingIn,

    createRoleBinding: (b) =>
      db.write(async (sql) => {
        await bind(sql, b);
        return roleBindingRecordOf((await find(sql, b.uid))!);
      }),

    getRoleBinding: (uid) => getRoleBindingIn(db.sql, uid),

    updateRoleBinding: (uid, roleUid, now) =>
      db.write(async (sql) => {
        const row = await find(sql, uid);
        if (!row) throw new StoreError("not_found", `role binding ${JSON.stringify(uid)}`);
        await mustExist(sql, "role", roleUid);
        if (roleUid !== row.role_uid) await lastOwner.binding(sql, uid);
        await checkUnique(sql, row.identity_uid, row.group_uid, roleUid, uid);
        await sql.run("UPDATE role_bindings SET role_uid = $1, update_time = $2 WHERE uid = $3", [
          roleUid,
          now,
          uid,
        ]);
        return roleBindingRecordOf((await find(sql, uid))!);
      }),

    deleteRoleBinding: (uid) =>
      db.write(async (sql) => {
        await lastOwner.binding(sql, uid);
        if ((await sql.run("DELETE FROM role_bindings WHERE uid = $1", [uid])) === 0) {
          throw new StoreError("not_found", `role binding ${JSON.stringify(uid)}`);
        }
      }),

    listRoleBindings: async (query) => {
      const page = await lists.list(query, roleBindingConditions(query.filters));
      return {
        items: page.rows.map(roleBindingRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },

    createOrganization: (group, owner) =>
      db.write(async (sql) => {
        // Checked first, so that a vanished identity leaves no ownerless organization behind.
        await mustExist(sql, "identity", owner.identityUid);
        const created = await createGroupIn(sql, { ...group, parentUid: "" });
        await bind(sql, {
          uid: owner.bindingUid,
          groupUid: group.uid,
          identityUid: owner.identityUid,
          roleUid: owner.roleUid,
          now: group.now,
        });
        return created;
      }),
  };
}
