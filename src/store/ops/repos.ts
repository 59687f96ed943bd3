import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import type { NewRepo, RepoPatch } from "../registry-store.js";
import { type RepoRow, repoListColumns, repoRecordOf } from "../rows/repo-rows.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  one,
  run,
  type Steps,
  updateRow,
  write,
} from "./operation.js";

const selectRepo = "SELECT * FROM repos WHERE uid = ?";

const mustFind = (uid: string) => found<RepoRow>("repo", selectRepo, uid);

function* checkName(groupUid: string, name: string, self: string): Steps<void> {
  if (
    yield* exists(
      "SELECT 1 FROM repos WHERE group_uid = ? AND name = ? AND uid <> ? LIMIT 1",
      groupUid,
      name,
      self,
    )
  ) {
    throw new StoreError("already_exists", `a repo of the group is named ${JSON.stringify(name)}`);
  }
}

/**
 * The repo operations of both backends. No access answer depends on a repo (access comes from
 * identities, roles and bindings), so every repo write keeps the access caches warm.
 */
export const repoOps = {
  createRepo: write(
    function* (r: NewRepo) {
      if (parentOf(r.uid) !== r.groupUid) {
        throw new Error(`repo uid ${r.uid} is not a direct child of ${r.groupUid}`);
      }
      yield* mustExist("group", r.groupUid);
      if (yield* exists("SELECT 1 FROM repos WHERE uid = ?", r.uid)) {
        throw new StoreError("already_exists", `repo ${JSON.stringify(r.uid)}`);
      }
      yield* checkName(r.groupUid, r.name, r.uid);
      const row = yield* one<RepoRow>(
        `INSERT INTO repos (uid, group_uid, name, description, aliases, is_public, create_time,
           update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        r.uid,
        r.groupUid,
        r.name,
        r.description,
        JSON.stringify(r.aliases),
        r.public ?? false,
        r.now,
        r.now,
      );
      return repoRecordOf(row!);
    },
    { accessNeutral: true },
  ),

  getRepo: lookup(selectRepo, repoRecordOf),

  updateRepo: write(
    function* (uid: string, patch: RepoPatch, now: number) {
      const row = yield* mustFind(uid);
      if (isEmptyPatch(patch)) return repoRecordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) yield* checkName(row.group_uid, name, uid);
      const updated = yield* updateRow<RepoRow>(
        { reread: selectRepo, key: uid },
        `UPDATE repos SET name = ?, description = ?, aliases = ?, is_public = ?, update_time = ?
         WHERE uid = ?`,
        name,
        patch.description ?? row.description,
        patch.aliases ? JSON.stringify(patch.aliases) : row.aliases,
        patch.public ?? Boolean(row.is_public),
        now,
        uid,
      );
      return repoRecordOf(updated!);
    },
    { accessNeutral: true },
  ),

  deleteRepo: write(
    function* (uid: string) {
      yield* mustFind(uid);
      if (yield* exists("SELECT 1 FROM tags WHERE repo_uid = ? LIMIT 1", uid)) {
        throw new StoreError("not_empty", `repo ${JSON.stringify(uid)} has tags`, "tags", "repo");
      }
      yield* run("DELETE FROM repos WHERE uid = ?", uid);
    },
    { accessNeutral: true },
  ),

  listRepos: list(repoListColumns, repoRecordOf),
} satisfies OpsOf<"createRepo" | "getRepo" | "updateRepo" | "deleteRepo" | "listRepos">;
