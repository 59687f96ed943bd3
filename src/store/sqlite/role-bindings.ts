import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import type { NewRoleBinding } from "../iam-store.js";
import {
  type BindingRow,
  roleBindingConditions,
  roleBindingListColumns,
  roleBindingRecordOf,
} from "../rows/role-binding-rows.js";
import { type GroupRecord, type NewGroup, StoreError } from "../store.js";
import type { LastOwnerGuard } from "./last-owner.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The role-binding operations of the SQLite store, and organization creation. */
export type RoleBindingOps = SyncOps<
  | "createRoleBinding"
  | "getRoleBinding"
  | "updateRoleBinding"
  | "deleteRoleBinding"
  | "listRoleBindings"
  | "createOrganization"
>;

/**
 * Create the role-binding operations on an open, migrated database. `createGroup` is the
 * group operation, which createOrganization runs in its own transaction.
 */
export function createRoleBindingOps(
  db: Database,
  createGroup: (g: NewGroup) => GroupRecord,
  lastOwner: LastOwnerGuard,
): RoleBindingOps {
  const get = db.prepare("SELECT * FROM role_bindings_view WHERE uid = ?");
  const exists = {
    group: db.prepare("SELECT 1 FROM groups WHERE uid = ?"),
    identity: db.prepare("SELECT 1 FROM identities WHERE uid = ?"),
    role: db.prepare("SELECT 1 FROM roles WHERE uid = ?"),
    binding: db.prepare("SELECT 1 FROM role_bindings WHERE uid = ?"),
  };
  const duplicate = db.prepare(
    `SELECT 1 FROM role_bindings
     WHERE identity_uid = ? AND group_uid = ? AND role_uid = ? AND uid <> ?`,
  );
  const insert = db.prepare(
    `INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time, update_time)
     VALUES (@uid, @groupUid, @identityUid, @roleUid, @now, @now)`,
  );
  const update = db.prepare("UPDATE role_bindings SET role_uid = ?, update_time = ? WHERE uid = ?");
  const remove = db.prepare("DELETE FROM role_bindings WHERE uid = ?");
  const lists = createListSql<BindingRow>(db, roleBindingListColumns);

  const find = (uid: string) => get.get(uid) as BindingRow | undefined;
  const mustExist = (kind: keyof typeof exists, uid: string) => {
    if (!exists[kind].get(uid)) throw new StoreError("not_found", `${kind} ${JSON.stringify(uid)}`);
  };
  const checkUnique = (identityUid: string, groupUid: string, roleUid: string, self: string) => {
    if (duplicate.get(identityUid, groupUid, roleUid, self)) {
      throw new StoreError("already_exists", "the identity already has this role at this group");
    }
  };
  const bind = (b: NewRoleBinding) => {
    if (parentOf(b.uid) !== b.groupUid || b.groupUid === "") {
      throw new Error(`role binding uid ${b.uid} is not a direct child of ${b.groupUid}`);
    }
    mustExist("group", b.groupUid);
    mustExist("identity", b.identityUid);
    mustExist("role", b.roleUid);
    if (exists.binding.get(b.uid)) {
      throw new StoreError("already_exists", `role binding ${JSON.stringify(b.uid)}`);
    }
    checkUnique(b.identityUid, b.groupUid, b.roleUid, b.uid);
    insert.run(b);
  };

  return {
    createRoleBinding: db.transaction((b: NewRoleBinding) => {
      bind(b);
      return roleBindingRecordOf(find(b.uid)!);
    }).immediate,

    getRoleBinding: (uid) => {
      const row = find(uid);
      return row && roleBindingRecordOf(row);
    },

    updateRoleBinding: db.transaction((uid: string, roleUid: string, now: number) => {
      const row = find(uid);
      if (!row) throw new StoreError("not_found", `role binding ${JSON.stringify(uid)}`);
      mustExist("role", roleUid);
      if (roleUid !== row.role_uid) lastOwner.binding(uid);
      checkUnique(row.identity_uid, row.group_uid, roleUid, uid);
      update.run(roleUid, now, uid);
      return roleBindingRecordOf(find(uid)!);
    }).immediate,

    deleteRoleBinding: db.transaction((uid: string) => {
      lastOwner.binding(uid);
      if (remove.run(uid).changes === 0) {
        throw new StoreError("not_found", `role binding ${JSON.stringify(uid)}`);
      }
    }).immediate,

    listRoleBindings: (query) => {
      const page = lists.list(query, roleBindingConditions(query.filters));
      return {
        items: page.rows.map(roleBindingRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },

    createOrganization: db.transaction(
      (
        group: { uid: string; name: string; description: string; now: number },
        owner: { bindingUid: string; identityUid: string; roleUid: string },
      ) => {
        // Checked first, so that a vanished identity leaves no ownerless organization behind.
        mustExist("identity", owner.identityUid);
        const created = createGroup({ ...group, parentUid: "" });
        bind({
          uid: owner.bindingUid,
          groupUid: group.uid,
          identityUid: owner.identityUid,
          roleUid: owner.roleUid,
          now: group.now,
        });
        return created;
      },
    ).immediate,
  };
}
