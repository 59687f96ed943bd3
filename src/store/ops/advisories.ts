import { parentOf } from "../../uid.js";
import type { AdvisoryContent, AdvisoryFilters, AdvisoryPatch } from "../advisory-store.js";
import { isEmptyPatch } from "../patch.js";
import type { PutOutcome } from "../registry-store.js";
import {
  type AdvisoryColumns,
  type AdvisoryRow,
  advisories,
  advisoryColumnConditions,
  advisoryColumnsOf,
  advisoryContentOf,
  advisoryRecordOf,
  advisoryRowOf,
  definedOf,
  sameAdvisoryContent,
  storedAdvisoryColumns,
} from "../rows/advisory-rows.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import {
  found,
  list,
  lookup,
  type OpsOf,
  one,
  type Param,
  run,
  type Steps,
  type Text,
  write,
} from "./operation.js";

// SQLite's trigram index answers substrings of at least three characters; shorter ones scan.
const minTrigramQuery = 3;

const selectAdvisory = advisories.select;

function* find(uid: string): Steps<AdvisoryRow | undefined> {
  return yield* one<AdvisoryRow>(selectAdvisory, uid);
}

const mustFind = (uid: string) => found<AdvisoryRow>("advisory", selectAdvisory, uid);

/** The advisory of the group with `advisoryId`, if any. */
function* byId(groupUid: string, advisoryId: string): Steps<AdvisoryRow | undefined> {
  return yield* one<AdvisoryRow>(
    "SELECT * FROM advisories WHERE group_uid = ? AND advisory_id = ?",
    groupUid,
    advisoryId,
  );
}

/** Refuse `advisoryId` if another advisory of the group (not `self`) has it. */
function* checkId(groupUid: string, advisoryId: string, self: string | undefined): Steps<void> {
  const other = yield* byId(groupUid, advisoryId);
  if (other && other.uid !== self) {
    throw new StoreError(
      "already_exists",
      `the group has an advisory ${JSON.stringify(advisoryId)}`,
    );
  }
}

/** The error of a new advisory whose uid is taken. */
export function taken(uid: string): StoreError {
  return new StoreError("already_exists", `advisory ${JSON.stringify(uid)}`);
}

/** Add the alias rows (the alias filter's index) of an advisory's `aliases` (JSON). */
function* addAliases(seq: number, aliases: string): Steps<void> {
  const list = JSON.parse(aliases) as string[];
  if (list.length === 0) return;
  yield* run(
    {
      sqlite:
        "INSERT OR IGNORE INTO advisory_aliases (alias, advisory_seq) SELECT value, ? FROM json_each(?)",
      pg: `INSERT INTO advisory_aliases (alias, advisory_seq)
           SELECT x, ?::bigint FROM unnest(?::text[]) AS x ON CONFLICT DO NOTHING`,
    },
    seq,
    list,
  );
}

/** Insert a new advisory whose uid must lie directly under its group's; its row. */
function* insert(uid: string, groupUid: string, c: AdvisoryColumns, now: number) {
  const row = yield* insertRow(advisories, {
    uid,
    group_uid: groupUid,
    ...advisoryRowOf(c),
    create_time: now,
    update_time: now,
  });
  yield* addAliases(row.seq, c.aliases);
  return row;
}

/** Replace an advisory's content (uid and createTime kept); its row. */
function* replace(row: AdvisoryRow, c: AdvisoryColumns, now: number): Steps<AdvisoryRow> {
  const updated = yield* updateStored(advisories, row.uid, {
    ...advisoryRowOf(c),
    update_time: now,
  });
  if (c.aliases !== row.aliases) {
    yield* run("DELETE FROM advisory_aliases WHERE advisory_seq = ?", row.seq);
    yield* addAliases(row.seq, c.aliases);
  }
  return updated;
}

/** Refuse (a bug, not a caller's mistake) a new advisory uid not directly under its group's. */
export function checkUid(uid: string, groupUid: string): void {
  if (parentOf(uid) !== groupUid) {
    throw new Error(`advisory uid ${uid} is not a direct child of ${groupUid}`);
  }
}

// No access answer depends on an advisory (access comes from identities, roles and bindings):
// advisory writes and imports leave the access caches warm.
const neutral = { accessNeutral: true };

/**
 * The advisory operations of both backends. importAdvisories upserts one advisory after the
 * other; PostgreSQL overrides it with a planned import of a few `unnest` statements
 * (postgres/advisories.ts) instead of a round trip or more per advisory.
 */
export const advisoryOps = {
  createAdvisory: write(function* (
    uid: string,
    groupUid: string,
    content: AdvisoryContent,
    now: number,
  ) {
    yield* mustExist("group", groupUid);
    yield* checkId(groupUid, content.advisoryId, undefined);
    checkUid(uid, groupUid);
    if (yield* find(uid)) throw taken(uid);
    return advisoryRecordOf(yield* insert(uid, groupUid, advisoryColumnsOf(content), now));
  }, neutral),

  getAdvisory: lookup(selectAdvisory, advisoryRecordOf),

  updateAdvisory: write(function* (uid: string, patch: AdvisoryPatch, now: number) {
    const row = yield* mustFind(uid);
    if (isEmptyPatch(patch)) return advisoryRecordOf(row);
    const merged: AdvisoryContent = { ...advisoryContentOf(row), ...definedOf(patch) };
    if (merged.advisoryId !== row.advisory_id) {
      yield* checkId(row.group_uid, merged.advisoryId, uid);
    }
    return advisoryRecordOf(yield* replace(row, advisoryColumnsOf(merged), now));
  }, neutral),

  deleteAdvisory: write(function* (uid: string) {
    const { seq } = yield* mustFind(uid);
    yield* run("DELETE FROM advisories WHERE seq = ?", seq);
  }, neutral),

  // Each advisory sees the ones before it (an advisoryId may come twice). The one that cannot
  // be written (its new uid is taken) is rejected before anything of it is written, alone.
  importAdvisories: write(function* (
    groupUid: string,
    advisories: readonly AdvisoryContent[],
    newUid: () => string,
    now: number,
  ) {
    yield* mustExist("group", groupUid);
    const outcomes: (PutOutcome | { rejected: string })[] = [];
    for (const a of advisories) {
      const c = advisoryColumnsOf(a);
      const existing = yield* byId(groupUid, c.advisoryId);
      if (existing) {
        if (sameAdvisoryContent(storedAdvisoryColumns(existing), c)) {
          outcomes.push("unchanged");
        } else {
          yield* replace(existing, c, now);
          outcomes.push("updated");
        }
        continue;
      }
      const uid = newUid();
      checkUid(uid, groupUid);
      if (yield* find(uid)) {
        outcomes.push({ rejected: taken(uid).message });
        continue;
      }
      yield* insert(uid, groupUid, c, now);
      outcomes.push("created");
    }
    return outcomes;
  }, neutral),

  listAdvisories: list(advisories.listColumns, advisoryRecordOf, (query) => ({
    query,
    extra: advisoryConditions(query.filters),
  })),
} satisfies OpsOf<
  | "createAdvisory"
  | "getAdvisory"
  | "updateAdvisory"
  | "deleteAdvisory"
  | "importAdvisories"
  | "listAdvisories"
>;

/** The filters' conditions; the substring search is the one whose SQL differs. */
function advisoryConditions(f: AdvisoryFilters): { sql: Text; params: Param[] }[] {
  const out: { sql: Text; params: Param[] }[] = advisoryColumnConditions(f);
  if (f.query !== undefined && f.query !== "") {
    const q = f.query.toLowerCase();
    out.push({
      sql: {
        // A quoted FTS5 string is a phrase: consecutive trigrams, i.e. a substring.
        sqlite:
          [...q].length >= minTrigramQuery
            ? `t.seq IN (SELECT s.rowid FROM advisory_search AS s
                 WHERE advisory_search MATCH '"' || replace(?, '"', '""') || '"')`
            : "instr(t.search, ?) > 0",
        // No trigram index is assumed on PostgreSQL: a scan of the lowercased search text,
        // whose lines never join, so neither do fields.
        pg: "strpos(t.search, ?) > 0",
      },
      params: [q],
    });
  }
  return out;
}
