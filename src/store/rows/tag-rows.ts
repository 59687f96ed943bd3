import type { ListClause, ListColumns } from "../list-clauses.js";
import type { TagFilters, TagRecord } from "../registry-store.js";
import type { StoredFlag } from "./stored-flag.js";

/** A tags row as a backend reads it; `Flag` narrows `deprecated` to that backend's type. */
export interface TagRow<Flag extends StoredFlag = StoredFlag> {
  uid: string;
  repo_uid: string;
  group_uid: string;
  name: string;
  digest: string;
  deprecated: Flag;
  create_time: number;
  update_time: number;
}

/** The record of a stored tag. */
export function tagRecordOf(row: TagRow): TagRecord {
  return {
    uid: row.uid,
    repoUid: row.repo_uid,
    name: row.name,
    digest: row.digest,
    deprecated: Boolean(row.deprecated),
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of tags. */
export const tagListColumns: ListColumns = {
  table: "tags",
  uid: "uid",
  parent: "repo_uid",
  group: "group_uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};

/**
 * The list conditions of a tag query's filters that read the same on both backends; each adds
 * its own for `excludeReferrers`, a pattern in its own dialect, after these.
 */
export function tagColumnConditions(f: TagFilters): ListClause[] {
  const out: ListClause[] = [];
  if (f.digest !== undefined) out.push({ sql: "t.digest = ?", params: [f.digest] });
  if (f.updatedSince !== undefined) {
    out.push({ sql: "t.update_time >= ?", params: [f.updatedSince] });
  }
  return out;
}
