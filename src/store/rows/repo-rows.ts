import type { RepoRecord } from "../registry-store.js";
import { declareResource } from "./resource.js";
import type { StoredFlag } from "./stored-flag.js";

/** A repos row as both backends store it (aliases as JSON). */
export interface RepoRow {
  uid: string;
  group_uid: string;
  name: string;
  description: string;
  aliases: string;
  is_public: StoredFlag;
  create_time: number;
  update_time: number;
}

/** A registry repo's storage: a child of its group, whose delete it blocks. */
export const repos = declareResource<RepoRow, RepoRecord>({
  kind: "repo",
  collection: "repos",
  message: "gatehouse.registry.v2beta1.Repo",
  table: "repos",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    aliases: { field: "aliases", updated: true },
    is_public: { field: "public", updated: true },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
  },
  computed: {
    pull_reference: "the registry host and the repo's path, from the server's public URL",
  },
  parent: { kind: "group", column: "group_uid", onDelete: "block" },
  recordOf: repoRecordOf,
});

/** The record of a stored repo. */
export function repoRecordOf(row: RepoRow): RepoRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    name: row.name,
    description: row.description,
    aliases: JSON.parse(row.aliases) as string[],
    public: Boolean(row.is_public),
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of repos. */
export const repoListColumns = repos.listColumns;
