import type { ListColumns } from "../list-clauses.js";
import type { RepoRecord } from "../registry-store.js";

/** A repos row as both backends store it (aliases as JSON). */
export interface RepoRow {
  uid: string;
  group_uid: string;
  name: string;
  description: string;
  aliases: string;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  is_public: number | boolean;
  create_time: number;
  update_time: number;
}

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
export const repoListColumns: ListColumns = {
  table: "repos",
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};
