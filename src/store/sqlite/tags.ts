import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import type { NewTag, PutOutcome, TagFilters } from "../registry-store.js";
import { type TagRow, tagColumnConditions, tagListColumns, tagRecordOf } from "../rows/tag-rows.js";
import { StoreError } from "../store.js";
import { createListSql, type SqlCondition } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The tag operations of the SQLite store. */
export type TagOps = SyncOps<"putTag" | "importTags" | "getTag" | "deleteTag" | "listTags">;

/** Create the tag operations on an open, migrated database. */
export function createTagOps(db: Database): TagOps {
  const get = db.prepare("SELECT * FROM tags WHERE uid = ?");
  const repoGroup = db.prepare("SELECT group_uid FROM repos WHERE uid = ?").pluck();
  const byName = db.prepare("SELECT * FROM tags WHERE repo_uid = ? AND name = ?");
  const insert = db.prepare(
    `INSERT INTO tags (uid, repo_uid, group_uid, name, digest, deprecated, create_time, update_time)
     VALUES (@uid, @repoUid, @groupUid, @name, @digest, @deprecated, @now, @now)`,
  );
  const move = db.prepare(
    "UPDATE tags SET digest = @digest, deprecated = @deprecated, update_time = @now WHERE uid = @uid",
  );
  const remove = db.prepare("DELETE FROM tags WHERE uid = ?");
  const lists = createListSql<TagRow>(db, tagListColumns);

  const groupOf = (repoUid: string): string => {
    const group = repoGroup.get(repoUid) as string | undefined;
    if (group === undefined) throw new StoreError("not_found", `repo ${JSON.stringify(repoUid)}`);
    return group;
  };

  /** Put one tag into a repo whose group is known; `touchSame`: refresh an unchanged tag too. */
  const put = (
    repoUid: string,
    groupUid: string,
    tag: NewTag,
    newUid: () => string,
    now: number,
    touchSame: boolean,
  ): { row: TagRow; outcome: PutOutcome } => {
    const deprecated = tag.deprecated ? 1 : 0;
    const existing = byName.get(repoUid, tag.name) as TagRow | undefined;
    if (existing) {
      if (!touchSame && existing.digest === tag.digest && existing.deprecated === deprecated) {
        return { row: existing, outcome: "unchanged" };
      }
      move.run({ uid: existing.uid, digest: tag.digest, deprecated, now });
      return { row: get.get(existing.uid) as TagRow, outcome: "updated" };
    }
    const uid = newUid();
    if (parentOf(uid) !== repoUid) throw new Error(`tag uid ${uid} is not under ${repoUid}`);
    insert.run({ uid, repoUid, groupUid, name: tag.name, digest: tag.digest, deprecated, now });
    return { row: get.get(uid) as TagRow, outcome: "created" };
  };

  return {
    putTag: db.transaction((repoUid: string, tag: NewTag, newUid: () => string, now: number) => {
      const { row, outcome } = put(repoUid, groupOf(repoUid), tag, newUid, now, true);
      const moved: "created" | "updated" = outcome === "created" ? "created" : "updated";
      return { tag: tagRecordOf(row), outcome: moved };
    }).immediate,

    importTags: db.transaction(
      (repoUid: string, tags: readonly NewTag[], newUid: () => string, now: number) => {
        const groupUid = groupOf(repoUid);
        return tags.map((t) => put(repoUid, groupUid, t, newUid, now, false).outcome);
      },
    ).immediate,

    getTag: (uid) => {
      const row = get.get(uid) as TagRow | undefined;
      return row && tagRecordOf(row);
    },

    deleteTag: (uid) => {
      if (remove.run(uid).changes === 0) {
        throw new StoreError("not_found", `tag ${JSON.stringify(uid)}`);
      }
    },

    listTags: (query) => {
      const page = lists.list(query, tagConditions(query.filters));
      return { items: page.rows.map(tagRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

function tagConditions(f: TagFilters): SqlCondition[] {
  const out: SqlCondition[] = tagColumnConditions(f);
  // GLOB is case-sensitive, as referrer tags are (`sha256-` + hex digest).
  if (f.excludeReferrers) out.push({ sql: "t.name NOT GLOB 'sha256-*'", params: [] });
  return out;
}
