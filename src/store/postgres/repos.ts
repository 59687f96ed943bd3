import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { type RepoRow, repoListColumns, repoRecordOf } from "../rows/repo-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The repo operations of the PostgreSQL store. */
export type PgRepoOps = PgOps<"createRepo" | "getRepo" | "updateRepo" | "deleteRepo" | "listRepos">;

/** Create the repo operations on a migrated database. */
export function createPgRepoOps(db: PgDb): PgRepoOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<RepoRow>("SELECT * FROM repos WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `repo ${JSON.stringify(uid)}`);
    return row;
  };
  const checkName = async (sql: Sql, groupUid: string, name: string, self: string) => {
    if (
      await sql.one(
        "SELECT 1 FROM repos WHERE group_uid = $1 AND name = $2 AND uid <> $3 LIMIT 1",
        [groupUid, name, self],
      )
    ) {
      throw new StoreError(
        "already_exists",
        `a repo of the group is named ${JSON.stringify(name)}`,
      );
    }
  };
  const lists = createPgListSql<RepoRow>(db, repoListColumns);

  return {
    createRepo: (r) =>
      db.write(async (sql) => {
        if (parentOf(r.uid) !== r.groupUid) {
          throw new Error(`repo uid ${r.uid} is not a direct child of ${r.groupUid}`);
        }
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [r.groupUid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(r.groupUid)}`);
        }
        if (await find(sql, r.uid)) {
          throw new StoreError("already_exists", `repo ${JSON.stringify(r.uid)}`);
        }
        await checkName(sql, r.groupUid, r.name, r.uid);
        const row = await sql.one<RepoRow>(
          `INSERT INTO repos (uid, group_uid, name, description, aliases, is_public, create_time,
             update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
          [
            r.uid,
            r.groupUid,
            r.name,
            r.description,
            JSON.stringify(r.aliases),
            r.public ?? false,
            r.now,
          ],
        );
        return repoRecordOf(row!);
      }),

    getRepo: async (uid) => {
      const row = await find(db.sql, uid);
      return row && repoRecordOf(row);
    },

    updateRepo: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await mustFind(sql, uid);
        if (isEmptyPatch(patch)) return repoRecordOf(row);
        const name = patch.name ?? row.name;
        if (name !== row.name) await checkName(sql, row.group_uid, name, uid);
        const aliases = patch.aliases ? JSON.stringify(patch.aliases) : row.aliases;
        const updated = await sql.one<RepoRow>(
          `UPDATE repos SET name = $1, description = $2, aliases = $3, is_public = $4,
             update_time = $5
           WHERE uid = $6 RETURNING *`,
          [
            name,
            patch.description ?? row.description,
            aliases,
            patch.public ?? row.is_public,
            now,
            uid,
          ],
        );
        return repoRecordOf(updated!);
      }),

    deleteRepo: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        if (await sql.one("SELECT 1 FROM tags WHERE repo_uid = $1 LIMIT 1", [uid])) {
          throw new StoreError("not_empty", `repo ${JSON.stringify(uid)} has tags`, "tags", "repo");
        }
        await sql.run("DELETE FROM repos WHERE uid = $1", [uid]);
      }),

    listRepos: async (query) => {
      const page = await lists.list(query);
      return { items: page.rows.map(repoRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}
