import type { GroupRecord } from "../store.js";
import { declareResource } from "./resource.js";
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
 * A group's storage: a child of its parent group (an organization has none), whose delete it
 * blocks. Each backend creates a group its own way (with its closure rows and counts).
 */
export const groups = declareResource<GroupRow, GroupRecord>({
  kind: "group",
  collection: "groups",
  message: "gatehouse.iam.v2beta1.Group",
  table: "groups",
  columns: {
    id: { internal: "the integer key the closure rows refer to", generated: true },
    uid: { field: "uid" },
    // SQLite keeps the parent as its integer id, PostgreSQL as its uid: the record takes the
    // parent from the group's own uid on both.
    parent_uid: { internal: "the parent group, also the uid's prefix", only: "pg" },
    parent_id: { internal: "the parent group's integer id", only: "sqlite" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    verified: { field: "verified" },
    resource_limits: { field: "resource_limits" },
    descendant_count: {
      internal: "how many groups lie below, for ListGroups' totalCount",
      generated: true,
    },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
  },
  parent: {
    kind: "group",
    column: "parent_uid",
    onDelete: "block",
    // SQLite finds the children by their parent's integer id, PostgreSQL by its uid.
    find: {
      sqlite:
        "SELECT 1 FROM groups WHERE parent_id = (SELECT id FROM groups WHERE uid = ?) LIMIT 1",
      pg: "SELECT 1 FROM groups WHERE parent_uid = ? LIMIT 1",
    },
  },
  list: { group: "uid" },
  recordOf: groupRecordOf,
});

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
export const groupListColumns = groups.listColumns;
