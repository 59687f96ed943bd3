import type { ListClause } from "../list-clauses.js";
import type { TagFilters, TagRecord } from "../registry-store.js";
import { declareResource } from "./resource.js";
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

/** A tag's storage: a child of its repo, whose delete it blocks. */
export const tags = declareResource<TagRow, TagRecord>({
  kind: "tag",
  collection: "tags",
  message: "gatehouse.registry.v2beta1.Tag",
  table: "tags",
  columns: {
    uid: { field: "uid" },
    repo_uid: { internal: "the parent repo, also the uid's prefix" },
    group_uid: { internal: "the repo's group, kept on the row so that scope checks need no join" },
    name: { field: "name" },
    // A push moves a tag: its digest and deprecation are what putTag writes anew.
    digest: { field: "digest", updated: true },
    deprecated: { field: "deprecated", updated: true },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
  },
  parent: { kind: "repo", column: "repo_uid", onDelete: "block" },
  list: { group: "group_uid" },
  recordOf: tagRecordOf,
});

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
export const tagListColumns = tags.listColumns;

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
