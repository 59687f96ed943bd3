import type { RoleBindingFilters, RoleBindingRecord } from "../iam-store.js";
import type { ListClause } from "../list-clauses.js";
import { declareResource } from "./resource.js";

/** A role_bindings_view row as both backends read it: the binding and what it names. */
export interface BindingRow {
  uid: string;
  group_uid: string;
  /** NULL for a binding to a team. */
  identity_uid: string | null;
  /** NULL for a binding to an identity. */
  team_uid: string | null;
  role_uid: string;
  create_time: number;
  update_time: number;
  role_name: string;
  role_description: string;
  identity_name: string | null;
  identity_description: string | null;
  identity_issuer: string | null;
  identity_subject: string | null;
  team_name: string | null;
  team_description: string | null;
  group_name: string;
  group_description: string;
  /** When it stops granting (ms since the epoch); null: until revoked. */
  expire_time: number | null;
}

/**
 * A role binding's storage: a child of its group, deleted with it; it binds an identity or a
 * team (exactly one), deleting which deletes it too, and it blocks its role's delete
 * (deleteIdentity, deleteTeam, deleteRole). Read through role_bindings_view, which adds what
 * it names.
 */
export const roleBindings = declareResource<BindingRow, RoleBindingRecord>({
  kind: "role binding",
  collection: "roleBindings",
  message: "gatehouse.iam.v2beta1.RoleBinding",
  table: "role_bindings",
  view: "role_bindings_view",
  columns: {
    uid: { field: "uid" },
    group_uid: { field: "group" },
    identity_uid: {
      field: "identity_uid",
      unsortable: "NULL for a binding to a team: a keyset cursor cannot resume across NULLs",
    },
    team_uid: {
      field: "team_uid",
      unsortable: "NULL for a binding to an identity: a keyset cursor cannot resume across NULLs",
    },
    role_uid: { field: "role_uid", updated: true },
    create_time: { field: "create_time" },
    update_time: {
      internal: "when its role last changed: the API shows a binding's creation only",
    },
    role_name: { field: "role", fromView: true },
    role_description: { field: "role", fromView: true },
    identity_name: { field: "identity", fromView: true },
    identity_description: { field: "identity", fromView: true },
    identity_issuer: { field: "identity", fromView: true },
    identity_subject: { field: "identity", fromView: true },
    team_name: { field: "team", fromView: true },
    team_description: { field: "team", fromView: true },
    group_name: { field: "group", fromView: true },
    group_description: { field: "group", fromView: true },
    expire_time: {
      field: "expire_time",
      updated: true,
      unsortable: "NULL for a binding until revoked: a keyset cursor cannot resume across NULLs",
    },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "cascade" },
  list: { name: "role_name" },
  recordOf: roleBindingRecordOf,
});

/** The record of a stored role binding. */
export function roleBindingRecordOf(row: BindingRow): RoleBindingRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    identityUid: row.identity_uid ?? "",
    teamUid: row.team_uid ?? "",
    roleUid: row.role_uid,
    createTime: row.create_time,
    updateTime: row.update_time,
    identity: {
      uid: row.identity_uid ?? "",
      name: row.identity_name ?? "",
      description: row.identity_description ?? "",
      subject: row.identity_subject ?? "",
      issuer: row.identity_issuer ?? "",
    },
    ...(row.team_uid === null
      ? {}
      : {
          team: {
            uid: row.team_uid,
            name: row.team_name ?? "",
            description: row.team_description ?? "",
          },
        }),
    group: { uid: row.group_uid, name: row.group_name, description: row.group_description },
    role: { uid: row.role_uid, name: row.role_name, description: row.role_description },
    ...(row.expire_time === null ? {} : { expireTime: Number(row.expire_time) }),
  };
}

/**
 * Where the list SQL of either backend finds the columns of role bindings.
 * The view's name is the bound role's: bindings have no name of their own.
 */
export const roleBindingListColumns = roleBindings.listColumns;

/** The list conditions of a role-binding query's filters, the same SQL on both backends. */
export function roleBindingConditions(f: RoleBindingFilters): ListClause[] {
  const out: ListClause[] = [];
  if (f.identity) out.push({ sql: "t.identity_uid = ?", params: [f.identity] });
  if (f.group) out.push({ sql: "t.group_uid = ?", params: [f.group] });
  if (f.role) out.push({ sql: "t.role_uid = ?", params: [f.role] });
  if (f.team) out.push({ sql: "t.team_uid = ?", params: [f.team] });
  if (f.heldBy) {
    out.push({
      sql: `(t.identity_uid = ? OR t.team_uid IN
        (SELECT m.team_uid FROM team_members AS m WHERE m.identity_uid = ?))`,
      params: [f.heldBy, f.heldBy],
    });
  }
  return out;
}
