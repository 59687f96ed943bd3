import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import type { AdvisoryContent, AdvisoryFilters, AdvisoryPatch } from "../advisory-store.js";
import { isEmptyPatch } from "../patch.js";
import type { PutOutcome } from "../registry-store.js";
import {
  type AdvisoryColumns,
  type AdvisoryRow,
  advisoryColumnConditions,
  advisoryColumnsOf,
  advisoryContentOf,
  advisoryListColumns,
  advisoryRecordOf,
  definedOf,
  sameAdvisoryContent,
  storedAdvisoryColumns,
} from "../rows/advisory-rows.js";
import { StoreError } from "../store.js";
import { fromSqliteError } from "./from-sqlite-error.js";
import { createListSql, type SqlCondition } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The advisory operations of the SQLite store. */
export type AdvisoryOps = SyncOps<
  | "createAdvisory"
  | "getAdvisory"
  | "updateAdvisory"
  | "deleteAdvisory"
  | "listAdvisories"
  | "importAdvisories"
>;

// The trigram index answers substrings of at least three characters; shorter ones scan.
const minTrigramQuery = 3;

/** Create the advisory operations on an open, migrated database. */
export function createAdvisoryOps(db: Database): AdvisoryOps {
  const get = db.prepare("SELECT * FROM advisories WHERE uid = ?");
  const byId = db.prepare("SELECT * FROM advisories WHERE group_uid = ? AND advisory_id = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO advisories (uid, group_uid, advisory_id, aliases, summary, artifact_name,
       component_name, component_type, severities, events, latest_event_type, search,
       create_time, update_time)
     VALUES (@uid, @groupUid, @advisoryId, @aliases, @summary, @artifactName, @componentName,
       @componentType, @severities, @events, @latest, @search, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE advisories SET advisory_id = @advisoryId, aliases = @aliases, summary = @summary,
       artifact_name = @artifactName, component_name = @componentName,
       component_type = @componentType, severities = @severities, events = @events,
       latest_event_type = @latest, search = @search, update_time = @now
     WHERE seq = @seq`,
  );
  const insertAlias = db.prepare(
    "INSERT OR IGNORE INTO advisory_aliases (alias, advisory_seq) VALUES (?, ?)",
  );
  const deleteAliases = db.prepare("DELETE FROM advisory_aliases WHERE advisory_seq = ?");
  const remove = db.prepare("DELETE FROM advisories WHERE seq = ?");
  const lists = createListSql<AdvisoryRow>(db, advisoryListColumns);

  const find = (uid: string) => get.get(uid) as AdvisoryRow | undefined;
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `advisory ${JSON.stringify(uid)}`);
    return row;
  };
  const mustHaveGroup = (groupUid: string) => {
    if (!groupExists.get(groupUid)) {
      throw new StoreError("not_found", `group ${JSON.stringify(groupUid)}`);
    }
  };
  const checkId = (groupUid: string, advisoryId: string, selfSeq: number | undefined) => {
    const other = byId.get(groupUid, advisoryId) as AdvisoryRow | undefined;
    if (other && other.seq !== selfSeq) {
      throw new StoreError(
        "already_exists",
        `the group has an advisory ${JSON.stringify(advisoryId)}`,
      );
    }
  };
  const setAliases = (seq: number, aliases: readonly string[]) => {
    deleteAliases.run(seq);
    for (const a of aliases) insertAlias.run(a, seq);
  };
  const insertNew = (uid: string, groupUid: string, c: AdvisoryColumns, now: number) => {
    if (parentOf(uid) !== groupUid) {
      throw new Error(`advisory uid ${uid} is not a direct child of ${groupUid}`);
    }
    if (find(uid)) throw new StoreError("already_exists", `advisory ${JSON.stringify(uid)}`);
    const seq = Number(insert.run({ ...c, uid, groupUid, now }).lastInsertRowid);
    setAliases(seq, JSON.parse(c.aliases) as string[]);
  };
  const replace = (row: AdvisoryRow, c: AdvisoryColumns, now: number) => {
    update.run({ ...c, seq: row.seq, now });
    if (c.aliases !== row.aliases) setAliases(row.seq, JSON.parse(c.aliases) as string[]);
  };

  // A nested better-sqlite3 transaction is a savepoint: one advisory is all or nothing.
  const importOne = db.transaction(
    (groupUid: string, content: AdvisoryContent, newUid: () => string, now: number) => {
      const c = advisoryColumnsOf(content);
      const existing = byId.get(groupUid, content.advisoryId) as AdvisoryRow | undefined;
      if (!existing) {
        insertNew(newUid(), groupUid, c, now);
        return "created";
      }
      if (sameAdvisoryContent(storedAdvisoryColumns(existing), c)) return "unchanged";
      replace(existing, c, now);
      return "updated";
    },
  );

  return {
    createAdvisory: db.transaction(
      (uid: string, groupUid: string, content: AdvisoryContent, now: number) => {
        mustHaveGroup(groupUid);
        checkId(groupUid, content.advisoryId, undefined);
        insertNew(uid, groupUid, advisoryColumnsOf(content), now);
        return advisoryRecordOf(find(uid)!);
      },
    ).immediate,

    getAdvisory: (uid) => {
      const row = find(uid);
      return row && advisoryRecordOf(row);
    },

    updateAdvisory: db.transaction((uid: string, patch: AdvisoryPatch, now: number) => {
      const row = mustFind(uid);
      if (isEmptyPatch(patch)) return advisoryRecordOf(row);
      const merged: AdvisoryContent = { ...advisoryContentOf(row), ...definedOf(patch) };
      if (merged.advisoryId !== row.advisory_id) checkId(row.group_uid, merged.advisoryId, row.seq);
      replace(row, advisoryColumnsOf(merged), now);
      return advisoryRecordOf(find(uid)!);
    }).immediate,

    deleteAdvisory: db.transaction((uid: string) => {
      remove.run(mustFind(uid).seq);
    }).immediate,

    listAdvisories: (query) => {
      const page = lists.list(query, advisoryConditions(query.filters));
      return { items: page.rows.map(advisoryRecordOf), total: page.total, hasMore: page.hasMore };
    },

    importAdvisories: db.transaction(
      (
        groupUid: string,
        advisories: readonly AdvisoryContent[],
        newUid: () => string,
        now: number,
      ) => {
        mustHaveGroup(groupUid);
        return advisories.map((a): PutOutcome | { rejected: string } => {
          try {
            return importOne(groupUid, a, newUid, now) as PutOutcome;
          } catch (err) {
            const mapped = fromSqliteError(err);
            if (mapped instanceof StoreError) return { rejected: mapped.message };
            throw err;
          }
        });
      },
    ).immediate,
  };
}

function advisoryConditions(f: AdvisoryFilters): SqlCondition[] {
  const out: SqlCondition[] = advisoryColumnConditions(f);
  if (f.query !== undefined && f.query !== "") {
    const q = f.query.toLowerCase();
    if ([...q].length >= minTrigramQuery) {
      // A quoted FTS5 string is a phrase: consecutive trigrams, i.e. a substring.
      out.push({
        sql: "t.seq IN (SELECT s.rowid FROM advisory_search AS s WHERE advisory_search MATCH ?)",
        params: [`"${q.replaceAll('"', '""')}"`],
      });
    } else {
      out.push({ sql: "instr(t.search, ?) > 0", params: [q] });
    }
  }
  return out;
}
