import type { RoleRecord } from "../iam-store.js";
import { declareResource } from "./resource.js";
import type { StoredFlag } from "./stored-flag.js";

/**
 * A roles_view row as a backend reads it: the role and its capabilities. `Capabilities`
 * narrows that column to the backend's form.
 */
export interface RoleRow<Capabilities extends string | string[] = string | string[]> {
  uid: string;
  group_uid: string | null;
  name: string;
  description: string;
  builtin: StoredFlag;
  create_time: number;
  update_time: number;
  /**
   * SQLite: a JSON array as text, in no order. PostgreSQL: the array, parsed by pg and sorted
   * by the view (bytewise).
   */
  capabilities: Capabilities;
}

/**
 * A role's storage: a child of its group, whose delete it blocks (a built-in role has none).
 * Read through roles_view, which adds its capabilities; its capabilities and invites go with
 * it (ON DELETE CASCADE), and a binding to it blocks its delete (deleteRole).
 */
export const roles = declareResource<RoleRow, RoleRecord>({
  kind: "role",
  collection: "roles",
  message: "gatehouse.iam.v2beta1.Role",
  table: "roles",
  view: "roles_view",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group (NULL for a built-in role), also the uid's prefix" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    builtin: { internal: "seeded from the server's catalog at every open, never changed by calls" },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    // Rows of role_capabilities (setCapabilities), one a capability.
    capabilities: { field: "capabilities", fromView: true, updated: true },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "block" },
  recordOf: roleRecordOf,
});

/** The record of a stored role. */
export function roleRecordOf(row: RoleRow): RoleRecord {
  // Sorted, so that a role reads the same however its rows were stored.
  const capabilities =
    typeof row.capabilities === "string"
      ? (JSON.parse(row.capabilities) as string[]).sort(cmp)
      : row.capabilities;
  return {
    uid: row.uid,
    groupUid: row.group_uid ?? "",
    name: row.name,
    description: row.description,
    capabilities,
    builtin: Boolean(row.builtin),
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether two capability lists hold the same capabilities, in whatever order and count. */
export function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}

/** Where the list SQL of either backend finds the columns of roles. */
export const roleListColumns = roles.listColumns;
