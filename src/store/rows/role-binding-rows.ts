import type { RoleBindingFilters, RoleBindingRecord } from "../iam-store.js";
import type { ListClause, ListColumns } from "../list-clauses.js";

/** A role_bindings_view row as both backends read it: the binding and what it names. */
export interface BindingRow {
  uid: string;
  group_uid: string;
  identity_uid: string;
  role_uid: string;
  create_time: number;
  update_time: number;
  role_name: string;
  role_description: string;
  identity_name: string;
  identity_description: string;
  identity_issuer: string;
  identity_subject: string;
  group_name: string;
  group_description: string;
}

/** The record of a stored role binding. */
export function roleBindingRecordOf(row: BindingRow): RoleBindingRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    identityUid: row.identity_uid,
    roleUid: row.role_uid,
    createTime: row.create_time,
    updateTime: row.update_time,
    identity: {
      uid: row.identity_uid,
      name: row.identity_name,
      description: row.identity_description,
      subject: row.identity_subject,
      issuer: row.identity_issuer,
    },
    group: { uid: row.group_uid, name: row.group_name, description: row.group_description },
    role: { uid: row.role_uid, name: row.role_name, description: row.role_description },
  };
}

/**
 * Where the list SQL of either backend finds the columns of role bindings.
 * The view's name is the bound role's: bindings have no name of their own.
 */
export const roleBindingListColumns: ListColumns = {
  table: "role_bindings_view",
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "role_name",
  sort: { name: "role_name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};

/** The list conditions of a role-binding query's filters, the same SQL on both backends. */
export function roleBindingConditions(f: RoleBindingFilters): ListClause[] {
  const out: ListClause[] = [];
  if (f.identity) out.push({ sql: "t.identity_uid = ?", params: [f.identity] });
  if (f.group) out.push({ sql: "t.group_uid = ?", params: [f.group] });
  if (f.role) out.push({ sql: "t.role_uid = ?", params: [f.role] });
  return out;
}
