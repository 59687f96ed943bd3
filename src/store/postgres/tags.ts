import { newTagUid } from "../ops/tags.js";
import type { NewTag, PutOutcome } from "../registry-store.js";
import type { TagRow } from "../rows/tag-rows.js";
import { notFoundError } from "../store.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** A tag as an import leaves it; `write` says whether it must be inserted or updated. */
interface TagState {
  uid: string;
  name: string;
  digest: string;
  deprecated: boolean;
  write?: "insert" | "update";
}

// Rows an import writes per statement: each statement stays short, however large the import.
const batchSize = 1_000;

/**
 * importTags on PostgreSQL, overriding the shared one (ops/tags.ts), which takes a round trip
 * or two per tag: the tags are put one after the other in memory (a name may come twice),
 * then written in a few statements, each tag's last state inserted or updated, their columns
 * as parallel arrays, unnested.
 */
export function createPgTagImport(db: PgDb): PgOps<"importTags"> {
  const writeAll = async (sql: Sql, text: string, head: unknown[], tags: readonly TagState[]) => {
    for (let i = 0; i < tags.length; i += batchSize) {
      const part = tags.slice(i, i + batchSize);
      await sql.run(text, [...(head as string[]), ...columnsOf(part)]);
    }
  };
  return {
    importTags: (repoUid, tags, newUid, now) =>
      db.write(async (sql) => {
        const repo = await sql.one<{ group_uid: string }>(
          "SELECT group_uid FROM repos WHERE uid = $1",
          [repoUid],
        );
        if (!repo) throw notFoundError("repo", repoUid);
        const stored = await sql.rows<TagRow<boolean>>(
          "SELECT * FROM tags WHERE repo_uid = $1 AND name = ANY($2::text[])",
          [repoUid, [...new Set(tags.map((t) => t.name))]],
        );
        const byName = new Map<string, TagState>(stored.map((r) => [r.name, { ...r }]));
        const outcomes = tags.map((tag: NewTag): PutOutcome => {
          const current = byName.get(tag.name);
          if (!current) {
            byName.set(tag.name, { uid: newTagUid(repoUid, newUid), ...tag, write: "insert" });
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
        await writeAll(
          sql,
          `INSERT INTO tags (uid, repo_uid, group_uid, name, digest, deprecated, create_time,
               update_time)
             SELECT x.uid, $1, $2, x.name, x.digest, x.deprecated, $3, $3
             FROM unnest($4::text[], $5::text[], $6::text[], $7::boolean[])
               AS x(uid, name, digest, deprecated)`,
          [repoUid, repo.group_uid, now],
          all.filter((t) => t.write === "insert"),
        );
        await writeAll(
          sql,
          `UPDATE tags AS t SET digest = x.digest, deprecated = x.deprecated, update_time = $1
             FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[])
               AS x(uid, name, digest, deprecated)
             WHERE t.uid = x.uid`,
          [now],
          all.filter((t) => t.write === "update"),
        );
        return outcomes;
      }),
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
