import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import type { NewRepo, RepoPatch } from "../registry-store.js";
import { type RepoRow, repoRecordOf, repos } from "../rows/repo-rows.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { mustHaveNoChildren } from "../rows/resources.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import { exists, found, list, lookup, type OpsOf, run, type Steps, write } from "./operation.js";

const mustFind = (uid: string) => found<RepoRow>("repo", repos.select, uid);

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
      const row = yield* insertRow(repos, {
        uid: r.uid,
        group_uid: r.groupUid,
        name: r.name,
        description: r.description,
        aliases: JSON.stringify(r.aliases),
        is_public: r.public ?? false,
        create_time: r.now,
        update_time: r.now,
      });
      return repoRecordOf(row);
    },
    { accessNeutral: true },
  ),

  getRepo: lookup(repos.select, repoRecordOf),

  updateRepo: write(
    function* (uid: string, patch: RepoPatch, now: number) {
      const row = yield* mustFind(uid);
      if (isEmptyPatch(patch)) return repoRecordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) yield* checkName(row.group_uid, name, uid);
      const updated = yield* updateStored(repos, uid, {
        name,
        description: patch.description ?? row.description,
        aliases: patch.aliases ? JSON.stringify(patch.aliases) : row.aliases,
        is_public: patch.public ?? Boolean(row.is_public),
        update_time: now,
      });
      return repoRecordOf(updated);
    },
    { accessNeutral: true },
  ),

  deleteRepo: write(
    function* (uid: string) {
      yield* mustFind(uid);
      yield* mustHaveNoChildren("repo", uid);
      yield* run("DELETE FROM repos WHERE uid = ?", uid);
    },
    { accessNeutral: true },
  ),

  listRepos: list(repos.listColumns, repoRecordOf),
} satisfies OpsOf<"createRepo" | "getRepo" | "updateRepo" | "deleteRepo" | "listRepos">;
