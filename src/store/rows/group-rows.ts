import type { ListColumns } from "../list-clauses.js";
import type { Text } from "../ops/operation.js";
import type { GroupRecord } from "../store.js";
import type { StoredFlag } from "./stored-flag.js";

/** A groups row as both backends read it (PostgreSQL's also carries its `id`). */
export interface GroupRow {
  uid: string;
  parent_uid: string | null;
  name: string;
  description: string;
  verified: StoredFlag;
  resource_limits: string;
  create_time: number;
  update_time: number;
}

/**
 * What keeps a group from being deleted: a query per kind of child, true (a row) if the group
 * has one. `?` is the group's uid. Checked in this order: the first kind found is the one
 * reported, on both backends. Tables that live in a group add their entry here.
 */
export const childChecks: readonly { kind: string; sql: Text }[] = [
  { kind: "repos", sql: "SELECT 1 FROM repos WHERE group_uid = ? LIMIT 1" },
  // SQLite finds the children by their parent's integer id, PostgreSQL by its uid.
  {
    kind: "groups",
    sql: {
      sqlite:
        "SELECT 1 FROM groups WHERE parent_id = (SELECT id FROM groups WHERE uid = ?) LIMIT 1",
      pg: "SELECT 1 FROM groups WHERE parent_uid = ? LIMIT 1",
    },
  },
  { kind: "identities", sql: "SELECT 1 FROM identities WHERE group_uid = ? LIMIT 1" },
  { kind: "roles", sql: "SELECT 1 FROM roles WHERE group_uid = ? LIMIT 1" },
  {
    kind: "identityProviders",
    sql: "SELECT 1 FROM identity_providers WHERE group_uid = ? LIMIT 1",
  },
];

/** The record of a stored group. */
export function groupRecordOf(row: GroupRow): GroupRecord {
  return {
    uid: row.uid,
    parentUid: row.parent_uid ?? "",
    name: row.name,
    description: row.description,
    verified: Boolean(row.verified),
    resourceLimits: JSON.parse(row.resource_limits) as Record<string, number>,
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of groups. */
export const groupListColumns: ListColumns = {
  table: "groups",
  uid: "uid",
  parent: "parent_uid",
  group: "uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};
