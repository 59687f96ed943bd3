import { parentOf } from "../../uid.js";
import type { NewRole, RolePatch } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import { insertOnly, updateOnly } from "../rows/resource.js";
import { type RoleRow, roleRecordOf, roles, sameSet } from "../rows/role-rows.js";
import { type ListQuery, notFoundError, StoreError, type StoreRoles } from "../store.js";
import { mustExist } from "./must-exist.js";
import { exists, list, lookup, type OpsOf, one, run, type Steps, write } from "./operation.js";

const selectRole = roles.select;

function* find(uid: string): Steps<RoleRow | undefined> {
  return yield* one<RoleRow>(selectRole, uid);
}

function* mustFindCustom(uid: string): Steps<RoleRow> {
  const row = yield* find(uid);
  if (!row) throw notFoundError("role", uid);
  if (row.builtin) {
    throw new StoreError("failed_precondition", "built-in roles cannot be changed or deleted");
  }
  return row;
}

// One statement for the whole set, whatever its size.
function* setCapabilities(uid: string, caps: readonly string[]): Steps<void> {
  yield* run("DELETE FROM role_capabilities WHERE role_uid = ?", uid);
  yield* run(
    {
      sqlite: `INSERT OR IGNORE INTO role_capabilities (role_uid, capability)
               SELECT ?, value FROM json_each(?)`,
      pg: `INSERT INTO role_capabilities (role_uid, capability)
           SELECT DISTINCT ?::text, c FROM unnest(?::text[]) AS c`,
    },
    uid,
    caps,
  );
}

/**
 * Upsert the built-in roles (and replace their capabilities when the catalog changed), so the
 * access queries treat built-in and custom roles alike. Each store runs it at every open;
 * replicas opening at once are safe (the upsert, or a serialization retry, settles their race).
 */
export const seedBuiltins = write(function* (builtins: StoreRoles["builtins"], now: number) {
  for (const b of builtins) {
    const row = yield* find(b.uid);
    if (row && row.name === b.name && row.description === b.description) {
      const caps = roleRecordOf(row).capabilities;
      if (sameSet(caps, b.capabilities)) continue;
    }
    yield* run(
      `INSERT INTO roles (uid, group_uid, name, description, builtin, create_time, update_time)
       VALUES (?, NULL, ?, ?, ?, ?, ?)
       ON CONFLICT (uid) DO UPDATE SET name = excluded.name,
         description = excluded.description, update_time = excluded.update_time`,
      b.uid,
      b.name,
      b.description,
      true,
      now,
      now,
    );
    yield* setCapabilities(b.uid, b.capabilities);
  }
});

/** The role operations of both backends. */
export const roleOps = {
  createRole: write(function* (r: NewRole) {
    if (parentOf(r.uid) !== r.groupUid || r.groupUid === "") {
      throw new Error(`role uid ${r.uid} is not a direct child of ${r.groupUid}`);
    }
    yield* mustExist("group", r.groupUid);
    if (yield* find(r.uid)) throw new StoreError("already_exists", `role ${JSON.stringify(r.uid)}`);
    yield* insertOnly(roles, {
      uid: r.uid,
      group_uid: r.groupUid,
      name: r.name,
      description: r.description,
      builtin: false,
      create_time: r.now,
      update_time: r.now,
    });
    yield* setCapabilities(r.uid, r.capabilities);
    return roleRecordOf((yield* find(r.uid))!);
  }),

  getRole: lookup(selectRole, roleRecordOf),

  updateRole: write(function* (uid: string, patch: RolePatch, now: number) {
    const row = yield* mustFindCustom(uid);
    if (isEmptyPatch(patch)) return roleRecordOf(row);
    yield* updateOnly(roles, uid, {
      name: patch.name ?? row.name,
      description: patch.description ?? row.description,
      update_time: now,
    });
    if (patch.capabilities) yield* setCapabilities(uid, patch.capabilities);
    return roleRecordOf((yield* find(uid))!);
  }),

  deleteRole: write(function* (uid: string) {
    yield* mustFindCustom(uid);
    if (yield* exists("SELECT 1 FROM role_bindings WHERE role_uid = ? LIMIT 1", uid)) {
      throw new StoreError("failed_precondition", "the role is still bound; delete its bindings");
    }
    // Its capabilities and its invites go with it (ON DELETE CASCADE).
    yield* run("DELETE FROM roles WHERE uid = ?", uid);
  }),

  listRoles: list(roles.listColumns, roleRecordOf, (query) => {
    const { scope, ...rest } = query;
    return { query: rest, extra: scope === undefined ? [] : [roleScope(scope)] };
  }),
} satisfies OpsOf<"createRole" | "getRole" | "updateRole" | "deleteRole" | "listRoles">;

/**
 * A role is visible from a scope group when it is built-in, or when its group is at or below
 * the scope group (it is defined there), or above it (it is usable there). Nothing is visible
 * from an empty scope.
 */
function roleScope(scope: NonNullable<ListQuery["scope"]>) {
  const text = (count: string, uids: string) =>
    `${count} > 0 AND (t.group_uid IS NULL OR t.group_uid IN (
      SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.descendant
        WHERE c.ancestor IN (SELECT id FROM groups WHERE ${uids})
      UNION SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
        WHERE c.descendant IN (SELECT id FROM groups WHERE ${uids})))`;
  const groups = [...scope];
  return {
    sql: {
      sqlite: text("json_array_length(?)", "uid IN (SELECT value FROM json_each(?))"),
      pg: text("cardinality(?::text[])", "uid = ANY(?::text[])"),
    },
    params: [groups, groups, groups],
  };
}
