import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import type { NewRole, RolePatch } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import { type RoleRow, roleListColumns, roleRecordOf, sameSet } from "../rows/role-rows.js";
import { type ListQuery, StoreError } from "../store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** A built-in role as the store seeds it. */
export interface BuiltinRoleSeed {
  uid: string;
  name: string;
  description: string;
  capabilities: readonly string[];
}

/** The role operations of the SQLite store. */
export type RoleOps = SyncOps<"createRole" | "getRole" | "updateRole" | "deleteRole" | "listRoles">;

/**
 * Create the role operations on an open, migrated database, after seeding `builtins`: they
 * are upserted at every open (and their capabilities replaced when the catalog changed), so
 * the access queries treat built-in and custom roles alike.
 */
export function createRoleOps(
  db: Database,
  builtins: readonly BuiltinRoleSeed[],
  now: number,
): RoleOps {
  const get = db.prepare("SELECT * FROM roles_view WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO roles (uid, group_uid, name, description, builtin, create_time, update_time)
     VALUES (@uid, @group, @name, @description, @builtin, @now, @now)`,
  );
  const update = db.prepare(
    "UPDATE roles SET name = ?, description = ?, update_time = ? WHERE uid = ?",
  );
  const clearCapabilities = db.prepare("DELETE FROM role_capabilities WHERE role_uid = ?");
  const addCapability = db.prepare(
    "INSERT OR IGNORE INTO role_capabilities (role_uid, capability) VALUES (?, ?)",
  );
  const bound = db.prepare("SELECT 1 FROM role_bindings WHERE role_uid = ? LIMIT 1");
  const remove = db.prepare("DELETE FROM roles WHERE uid = ?");
  const lists = createListSql<RoleRow>(db, roleListColumns);

  const find = (uid: string) => get.get(uid) as RoleRow<string> | undefined;
  const setCapabilities = (uid: string, caps: readonly string[]) => {
    clearCapabilities.run(uid);
    for (const c of caps) addCapability.run(uid, c);
  };

  db.transaction(() => {
    for (const b of builtins) {
      const row = find(b.uid);
      if (!row) {
        insert.run({ ...b, group: null, builtin: 1, now });
        setCapabilities(b.uid, b.capabilities);
      } else if (
        row.name !== b.name ||
        row.description !== b.description ||
        !sameSet(JSON.parse(row.capabilities) as string[], b.capabilities)
      ) {
        update.run(b.name, b.description, now, b.uid);
        setCapabilities(b.uid, b.capabilities);
      }
    }
  }).immediate();

  const mustFindCustom = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `role ${JSON.stringify(uid)}`);
    if (row.builtin) {
      throw new StoreError("failed_precondition", "built-in roles cannot be changed or deleted");
    }
    return row;
  };

  return {
    createRole: db.transaction((r: NewRole) => {
      if (parentOf(r.uid) !== r.groupUid || r.groupUid === "") {
        throw new Error(`role uid ${r.uid} is not a direct child of ${r.groupUid}`);
      }
      if (!groupExists.get(r.groupUid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(r.groupUid)}`);
      }
      if (find(r.uid)) throw new StoreError("already_exists", `role ${JSON.stringify(r.uid)}`);
      insert.run({
        uid: r.uid,
        group: r.groupUid,
        name: r.name,
        description: r.description,
        builtin: 0,
        now: r.now,
      });
      setCapabilities(r.uid, r.capabilities);
      return roleRecordOf(find(r.uid)!);
    }).immediate,

    getRole: (uid) => {
      const row = find(uid);
      return row && roleRecordOf(row);
    },

    updateRole: db.transaction((uid: string, patch: RolePatch, now: number) => {
      const row = mustFindCustom(uid);
      if (isEmptyPatch(patch)) return roleRecordOf(row);
      update.run(patch.name ?? row.name, patch.description ?? row.description, now, uid);
      if (patch.capabilities) setCapabilities(uid, patch.capabilities);
      return roleRecordOf(find(uid)!);
    }).immediate,

    deleteRole: db.transaction((uid: string) => {
      mustFindCustom(uid);
      if (bound.get(uid)) {
        throw new StoreError("failed_precondition", "the role is still bound; delete its bindings");
      }
      remove.run(uid);
    }).immediate,

    listRoles: (query) => {
      const { scope, ...rest } = query;
      const page = lists.list(rest, scope === undefined ? [] : [roleScope(scope)]);
      return { items: page.rows.map(roleRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

/**
 * A role is visible from a scope group when it is built-in, or when its group is at or below
 * the scope group (it is defined there), or above it (it is usable there). Nothing is visible
 * from an empty scope.
 */
function roleScope(scope: NonNullable<ListQuery["scope"]>) {
  const groups = JSON.stringify(scope);
  return {
    sql: `json_array_length(?) > 0 AND (t.group_uid IS NULL OR t.group_uid IN (
      SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.descendant
        WHERE c.ancestor IN (SELECT id FROM groups WHERE uid IN (SELECT value FROM json_each(?)))
      UNION SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
        WHERE c.descendant IN (SELECT id FROM groups WHERE uid IN (SELECT value FROM json_each(?)))))`,
    params: [groups, groups, groups],
  };
}
