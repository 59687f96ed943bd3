import { parentOf } from "../../uid.js";
import type { NewTag, PutOutcome, TagFilters } from "../registry-store.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { type TagRow, tagColumnConditions, tagRecordOf, tags } from "../rows/tag-rows.js";
import { notFoundError } from "../store.js";
import { list, lookup, type OpsOf, one, run, type Steps, write } from "./operation.js";

/** The group of a repo, or `not_found`. */
function* groupOf(repoUid: string): Steps<string> {
  const row = yield* one<{ group_uid: string }>(
    "SELECT group_uid FROM repos WHERE uid = ?",
    repoUid,
  );
  if (!row) throw notFoundError("repo", repoUid);
  return row.group_uid;
}

/** A new tag's uid, which must lie directly under its repo's. */
export function newTagUid(repoUid: string, newUid: () => string): string {
  const uid = newUid();
  if (parentOf(uid) !== repoUid) throw new Error(`tag uid ${uid} is not under ${repoUid}`);
  return uid;
}

/** Put one tag into a repo whose group is known; `touchSame`: refresh an unchanged tag too. */
function* put(
  repoUid: string,
  groupUid: string,
  tag: NewTag,
  newUid: () => string,
  now: number,
  touchSame: boolean,
): Steps<{ row: TagRow; outcome: PutOutcome }> {
  const existing = yield* one<TagRow>(
    "SELECT * FROM tags WHERE repo_uid = ? AND name = ?",
    repoUid,
    tag.name,
  );
  if (existing) {
    const same = existing.digest === tag.digest && Boolean(existing.deprecated) === tag.deprecated;
    if (!touchSame && same) return { row: existing, outcome: "unchanged" };
    const row = yield* updateStored(tags, existing.uid, {
      digest: tag.digest,
      deprecated: tag.deprecated,
      update_time: now,
    });
    return { row, outcome: "updated" };
  }
  const row = yield* insertRow(tags, {
    uid: newTagUid(repoUid, newUid),
    repo_uid: repoUid,
    group_uid: groupUid,
    name: tag.name,
    digest: tag.digest,
    deprecated: tag.deprecated,
    create_time: now,
    update_time: now,
  });
  return { row, outcome: "created" };
}

// No access answer depends on a tag: tag pushes leave the access caches warm.
const neutral = { accessNeutral: true };

/**
 * The tag operations of both backends. importTags puts one tag after the other; PostgreSQL
 * overrides it with a few `unnest` statements (postgres/tags.ts), each a round trip.
 */
export const tagOps = {
  putTag: write(function* (repoUid: string, tag: NewTag, newUid: () => string, now: number) {
    const { row, outcome } = yield* put(repoUid, yield* groupOf(repoUid), tag, newUid, now, true);
    // A re-push refreshes the tag even when nothing about it changed.
    return { tag: tagRecordOf(row), outcome: outcome === "created" ? "created" : "updated" } as {
      tag: ReturnType<typeof tagRecordOf>;
      outcome: "created" | "updated";
    };
  }, neutral),

  pushTag: write(function* (repoUid: string, tag: NewTag, newUid: () => string, time: number) {
    const groupUid = yield* groupOf(repoUid);
    const existing = yield* one<TagRow>(
      "SELECT * FROM tags WHERE repo_uid = ? AND name = ?",
      repoUid,
      tag.name,
    );
    // A redelivery (same digest) or an event older than the tag's last move: nothing to do.
    if (existing && (existing.digest === tag.digest || existing.update_time > time)) {
      return { kind: "unchanged" as PutOutcome, tag: tagRecordOf(existing) };
    }
    const { row, outcome } = yield* put(repoUid, groupUid, tag, newUid, time, true);
    return { kind: outcome, tag: tagRecordOf(row) };
  }, neutral),

  importTags: write(function* (
    repoUid: string,
    tags: readonly NewTag[],
    newUid: () => string,
    now: number,
  ) {
    const groupUid = yield* groupOf(repoUid);
    const outcomes: PutOutcome[] = [];
    for (const t of tags)
      outcomes.push((yield* put(repoUid, groupUid, t, newUid, now, false)).outcome);
    return outcomes;
  }, neutral),

  getTag: lookup(tags.select, tagRecordOf),

  deleteTag: write(function* (uid: string) {
    if ((yield* run("DELETE FROM tags WHERE uid = ?", uid)) === 0) {
      throw notFoundError("tag", uid);
    }
  }, neutral),

  listTags: list(tags.listColumns, tagRecordOf, (query) => ({
    query,
    extra: tagConditions(query.filters),
  })),
} satisfies OpsOf<"putTag" | "pushTag" | "importTags" | "getTag" | "deleteTag" | "listTags">;

function tagConditions(f: TagFilters) {
  const out: { sql: string | { sqlite: string; pg: string }; params: (string | number)[] }[] =
    tagColumnConditions(f);
  // Case-sensitive, as referrer tags are (`sha256-` + hex digest): SQLite's LIKE is not.
  if (f.excludeReferrers) {
    out.push({
      sql: { sqlite: "t.name NOT GLOB 'sha256-*'", pg: "t.name NOT LIKE 'sha256-%'" },
      params: [],
    });
  }
  return out;
}
