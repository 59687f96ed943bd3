import { parentOf } from "../../uid.js";
import type { NewRoleBinding, RoleBindingFilters } from "../iam-store.js";
import { insertOnly, updateOnly } from "../rows/resource.js";
import {
  type BindingRow,
  roleBindingConditions,
  roleBindingRecordOf,
  roleBindings,
} from "../rows/role-binding-rows.js";
import { type GroupRecord, notFoundError, StoreError } from "../store.js";
import type { LastOwnerGuard } from "./last-owner.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  hook,
  list,
  lookup,
  type OpsOf,
  one,
  run,
  type Steps,
  write,
} from "./operation.js";

/** Who a binding binds: an identity or a team, by the column that holds it. */
type Holder = { column: "identity_uid" | "team_uid"; uid: string };

const holderOf = (row: Pick<BindingRow, "identity_uid" | "team_uid">): Holder =>
  row.team_uid === null
    ? { column: "identity_uid", uid: row.identity_uid ?? "" }
    : { column: "team_uid", uid: row.team_uid };

function* checkUnique(holder: Holder, groupUid: string, roleUid: string, self: string) {
  if (
    yield* exists(
      `SELECT 1 FROM role_bindings
       WHERE ${holder.column} = ? AND group_uid = ? AND role_uid = ? AND uid <> ?`,
      holder.uid,
      groupUid,
      roleUid,
      self,
    )
  ) {
    const who = holder.column === "team_uid" ? "team" : "identity";
    throw new StoreError("already_exists", `the ${who} already has this role at this group`);
  }
}

const selectBinding = roleBindings.select;

/** A role binding as its view shows it, or undefined: for group invites too. */
export function* findBinding(uid: string): Steps<BindingRow | undefined> {
  return yield* one<BindingRow>(selectBinding, uid);
}

function* bind(b: NewRoleBinding): Steps<void> {
  if (parentOf(b.uid) !== b.groupUid || b.groupUid === "") {
    throw new Error(`role binding uid ${b.uid} is not a direct child of ${b.groupUid}`);
  }
  const teamUid = b.teamUid ?? "";
  if ((b.identityUid === "") === (teamUid === "")) {
    throw new Error(`role binding ${b.uid} binds not exactly one identity or team`);
  }
  yield* mustExist("group", b.groupUid);
  if (teamUid === "") yield* mustExist("identity", b.identityUid);
  else yield* mustExist("team", teamUid);
  yield* mustExist("role", b.roleUid);
  if (yield* exists("SELECT 1 FROM role_bindings WHERE uid = ?", b.uid)) {
    throw new StoreError("already_exists", `role binding ${JSON.stringify(b.uid)}`);
  }
  const holder = holderOf({
    identity_uid: teamUid === "" ? b.identityUid : null,
    team_uid: teamUid === "" ? null : teamUid,
  });
  yield* checkUnique(holder, b.groupUid, b.roleUid, b.uid);
  yield* insertOnly(roleBindings, {
    uid: b.uid,
    group_uid: b.groupUid,
    identity_uid: teamUid === "" ? b.identityUid : null,
    team_uid: teamUid === "" ? null : teamUid,
    role_uid: b.roleUid,
    create_time: b.now,
    update_time: b.now,
  });
}

/** The role-binding operations of both backends, and organization creation. */
export function createRoleBindingOps(lastOwner: LastOwnerGuard) {
  return {
    createRoleBinding: write(function* (b: NewRoleBinding) {
      yield* bind(b);
      return roleBindingRecordOf((yield* findBinding(b.uid))!);
    }),

    getRoleBinding: lookup(selectBinding, roleBindingRecordOf),

    updateRoleBinding: write(function* (uid: string, roleUid: string, now: number) {
      const row = yield* findBinding(uid);
      if (!row) throw notFoundError("role binding", uid);
      yield* mustExist("role", roleUid);
      if (roleUid !== row.role_uid) yield* lastOwner.binding(uid);
      yield* checkUnique(holderOf(row), row.group_uid, roleUid, uid);
      yield* updateOnly(roleBindings, uid, { role_uid: roleUid, update_time: now });
      return roleBindingRecordOf((yield* findBinding(uid))!);
    }),

    deleteRoleBinding: write(function* (uid: string) {
      // Read in the delete's transaction: its event says what was revoked, as then named.
      const row = yield* findBinding(uid);
      if (!row) throw notFoundError("role binding", uid);
      yield* lastOwner.binding(uid);
      yield* run("DELETE FROM role_bindings WHERE uid = ?", uid);
      return roleBindingRecordOf(row);
    }),

    listRoleBindings: list(roleBindings.listColumns, roleBindingRecordOf, (query) => ({
      query,
      extra: roleBindingConditions((query.filters ?? {}) as RoleBindingFilters),
    })),

    createOrganization: write(function* (
      group: { uid: string; name: string; description: string; now: number },
      owner: { bindingUid: string; identityUid: string; roleUid: string },
    ): Steps<GroupRecord> {
      // Checked first, so that a vanished identity leaves no ownerless organization behind.
      yield* mustExist("identity", owner.identityUid);
      const created = yield* hook("createGroup", { ...group, parentUid: "" });
      yield* bind({
        uid: owner.bindingUid,
        groupUid: group.uid,
        identityUid: owner.identityUid,
        roleUid: owner.roleUid,
        now: group.now,
      });
      return created;
    }),
  } satisfies OpsOf<
    | "createRoleBinding"
    | "getRoleBinding"
    | "updateRoleBinding"
    | "deleteRoleBinding"
    | "listRoleBindings"
    | "createOrganization"
  >;
}
