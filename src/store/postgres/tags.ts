import { parentOf } from "../../uid.js";
import type { NewTag, PutOutcome, TagFilters } from "../registry-store.js";
import { type TagRow, tagColumnConditions, tagListColumns, tagRecordOf } from "../rows/tag-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql, type PgCondition } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** A tag as an import leaves it; `write` says whether it must be inserted or updated. */
interface TagState {
  uid: string;
  name: string;
  digest: string;
  deprecated: boolean;
  write?: "insert" | "update";
}

/** The tag operations of the PostgreSQL store. */
export type PgTagOps = PgOps<"putTag" | "importTags" | "getTag" | "deleteTag" | "listTags">;

// Rows an import writes per statement: each statement stays short, however large the import.
const batchSize = 1_000;

/** Create the tag operations on a migrated database. */
export function createPgTagOps(db: PgDb): PgTagOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<TagRow>("SELECT * FROM tags WHERE uid = $1", [uid]);
  const lists = createPgListSql<TagRow>(db, tagListColumns);

  const groupOf = async (sql: Sql, repoUid: string): Promise<string> => {
    const row = await sql.one<{ group_uid: string }>("SELECT group_uid FROM repos WHERE uid = $1", [
      repoUid,
    ]);
    if (!row) throw new StoreError("not_found", `repo ${JSON.stringify(repoUid)}`);
    return row.group_uid;
  };
  const newTagUid = (repoUid: string, newUid: () => string) => {
    const uid = newUid();
    if (parentOf(uid) !== repoUid) throw new Error(`tag uid ${uid} is not under ${repoUid}`);
    return uid;
  };

  // Many tags in one statement each way: their columns as parallel arrays, unnested.
  const insertAll = async (
    sql: Sql,
    repoUid: string,
    groupUid: string,
    tags: readonly TagState[],
    now: number,
  ) => {
    for (let i = 0; i < tags.length; i += batchSize) {
      const part = tags.slice(i, i + batchSize);
      await sql.run(
        `INSERT INTO tags (uid, repo_uid, group_uid, name, digest, deprecated, create_time,
           update_time)
         SELECT x.uid, $1, $2, x.name, x.digest, x.deprecated, $3, $3
         FROM unnest($4::text[], $5::text[], $6::text[], $7::boolean[])
           AS x(uid, name, digest, deprecated)`,
        [repoUid, groupUid, now, ...columnsOf(part)],
      );
    }
  };
  const moveAll = async (sql: Sql, tags: readonly TagState[], now: number) => {
    for (let i = 0; i < tags.length; i += batchSize) {
      const part = tags.slice(i, i + batchSize);
      await sql.run(
        `UPDATE tags AS t SET digest = x.digest, deprecated = x.deprecated, update_time = $1
         FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[])
           AS x(uid, name, digest, deprecated)
         WHERE t.uid = x.uid`,
        [now, ...columnsOf(part)],
      );
    }
  };

  return {
    putTag: (repoUid, tag, newUid, now) =>
      db.write(async (sql) => {
        const groupUid = await groupOf(sql, repoUid);
        const existing = await sql.one<TagRow>(
          "SELECT * FROM tags WHERE repo_uid = $1 AND name = $2",
          [repoUid, tag.name],
        );
        // A re-push refreshes the tag even when nothing about it changed.
        if (existing) {
          const row = await sql.one<TagRow>(
            "UPDATE tags SET digest = $1, deprecated = $2, update_time = $3 WHERE uid = $4 RETURNING *",
            [tag.digest, tag.deprecated, now, existing.uid],
          );
          return { tag: tagRecordOf(row!), outcome: "updated" as const };
        }
        const uid = newTagUid(repoUid, newUid);
        const row = await sql.one<TagRow>(
          `INSERT INTO tags (uid, repo_uid, group_uid, name, digest, deprecated, create_time,
             update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
          [uid, repoUid, groupUid, tag.name, tag.digest, tag.deprecated, now],
        );
        return { tag: tagRecordOf(row!), outcome: "created" as const };
      }),

    // The tags are put one after the other in memory (a name may come twice), then written
    // in a few statements: each tag's last state, inserted or updated.
    importTags: (repoUid, tags, newUid, now) =>
      db.write(async (sql) => {
        const groupUid = await groupOf(sql, repoUid);
        const stored = await sql.rows<TagRow<boolean>>(
          "SELECT * FROM tags WHERE repo_uid = $1 AND name = ANY($2::text[])",
          [repoUid, [...new Set(tags.map((t) => t.name))]],
        );
        const byName = new Map<string, TagState>(stored.map((r) => [r.name, { ...r }]));
        const outcomes = tags.map((tag: NewTag): PutOutcome => {
          const current = byName.get(tag.name);
          if (!current) {
            const uid = newTagUid(repoUid, newUid);
            byName.set(tag.name, { uid, ...tag, write: "insert" });
            return "created";
          }
          if (current.digest === tag.digest && current.deprecated === tag.deprecated) {
            return "unchanged";
          }
          current.digest = tag.digest;
          current.deprecated = tag.deprecated;
          current.write ??= "update";
          return "updated";
        });
        const all = [...byName.values()];
        await insertAll(
          sql,
          repoUid,
          groupUid,
          all.filter((t) => t.write === "insert"),
          now,
        );
        await moveAll(
          sql,
          all.filter((t) => t.write === "update"),
          now,
        );
        return outcomes;
      }),

    getTag: async (uid) => {
      const row = await find(db.sql, uid);
      return row && tagRecordOf(row);
    },

    deleteTag: (uid) =>
      db.write(async (sql) => {
        if ((await sql.run("DELETE FROM tags WHERE uid = $1", [uid])) === 0) {
          throw new StoreError("not_found", `tag ${JSON.stringify(uid)}`);
        }
      }),

    listTags: async (query) => {
      const page = await lists.list(query, tagConditions(query.filters));
      return { items: page.rows.map(tagRecordOf), total: page.total, hasMore: page.hasMore };
    },
  };
}

/** The columns of some tags as parallel arrays: uids, names, digests, deprecated flags. */
function columnsOf(tags: readonly TagState[]): string[][] {
  return [
    tags.map((t) => t.uid),
    tags.map((t) => t.name),
    tags.map((t) => t.digest),
    tags.map((t) => String(t.deprecated)),
  ];
}

function tagConditions(f: TagFilters): PgCondition[] {
  const out: PgCondition[] = tagColumnConditions(f);
  // LIKE is case-sensitive, as referrer tags are (`sha256-` + hex digest).
  if (f.excludeReferrers) out.push({ sql: "t.name NOT LIKE 'sha256-%'", params: [] });
  return out;
}
