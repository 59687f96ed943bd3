import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import type { NewRepo, RepoPatch } from "../registry-store.js";
import { type RepoRow, repoListColumns, repoRecordOf } from "../rows/repo-rows.js";
import { StoreError } from "../store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The repo operations of the SQLite store. */
export type RepoOps = SyncOps<"createRepo" | "getRepo" | "updateRepo" | "deleteRepo" | "listRepos">;

/** Create the repo operations on an open, migrated database. */
export function createRepoOps(db: Database): RepoOps {
  const get = db.prepare("SELECT * FROM repos WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const sibling = db.prepare(
    "SELECT 1 FROM repos WHERE group_uid = ? AND name = ? AND uid <> ? LIMIT 1",
  );
  const insert = db.prepare(
    `INSERT INTO repos (uid, group_uid, name, description, aliases, is_public, create_time, update_time)
     VALUES (@uid, @groupUid, @name, @description, @aliases, @isPublic, @now, @now)`,
  );
  const update = db.prepare(
    "UPDATE repos SET name = ?, description = ?, aliases = ?, is_public = ?, update_time = ? WHERE uid = ?",
  );
  const hasTags = db.prepare("SELECT 1 FROM tags WHERE repo_uid = ? LIMIT 1");
  const remove = db.prepare("DELETE FROM repos WHERE uid = ?");
  const lists = createListSql<RepoRow>(db, repoListColumns);

  const find = (uid: string) => get.get(uid) as RepoRow | undefined;
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `repo ${JSON.stringify(uid)}`);
    return row;
  };
  const checkName = (groupUid: string, name: string, self: string) => {
    if (sibling.get(groupUid, name, self)) {
      throw new StoreError(
        "already_exists",
        `a repo of the group is named ${JSON.stringify(name)}`,
      );
    }
  };

  return {
    createRepo: db.transaction((r: NewRepo) => {
      if (parentOf(r.uid) !== r.groupUid) {
        throw new Error(`repo uid ${r.uid} is not a direct child of ${r.groupUid}`);
      }
      if (!groupExists.get(r.groupUid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(r.groupUid)}`);
      }
      if (find(r.uid)) throw new StoreError("already_exists", `repo ${JSON.stringify(r.uid)}`);
      checkName(r.groupUid, r.name, r.uid);
      const { public: isPublic, ...rest } = r;
      insert.run({ ...rest, aliases: JSON.stringify(r.aliases), isPublic: isPublic ? 1 : 0 });
      return repoRecordOf(find(r.uid)!);
    }).immediate,

    getRepo: (uid) => {
      const row = find(uid);
      return row && repoRecordOf(row);
    },

    updateRepo: db.transaction((uid: string, patch: RepoPatch, now: number) => {
      const row = mustFind(uid);
      if (isEmptyPatch(patch)) return repoRecordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) checkName(row.group_uid, name, uid);
      const aliases = patch.aliases ? JSON.stringify(patch.aliases) : row.aliases;
      const isPublic = patch.public === undefined ? row.is_public : patch.public ? 1 : 0;
      update.run(name, patch.description ?? row.description, aliases, isPublic, now, uid);
      return repoRecordOf(find(uid)!);
    }).immediate,

    deleteRepo: db.transaction((uid: string) => {
      mustFind(uid);
      if (hasTags.get(uid)) {
        throw new StoreError("not_empty", `repo ${JSON.stringify(uid)} has tags`, "tags", "repo");
      }
      remove.run(uid);
    }).immediate,

    listRepos: (query) => {
      const page = lists.list(query);
      return { items: page.rows.map(repoRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}
