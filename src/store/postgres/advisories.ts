import { checkUid, taken } from "../ops/advisories.js";
import type { PutOutcome } from "../registry-store.js";
import {
  type AdvisoryColumns,
  type AdvisoryRow,
  advisoryColumnsOf,
  sameAdvisoryContent,
  storedAdvisoryColumns,
} from "../rows/advisory-rows.js";
import { notFoundError } from "../store.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** An advisory to write: its uid and its content's columns. */
interface Write {
  uid: string;
  c: AdvisoryColumns;
}

// Rows an import writes per statement: each statement stays short, however large the import.
const batchSize = 500;

// The uids and content columns, in the order of `arraysOf`, as unnest's output: parameters
// $2 to $12 of the statements that write advisories ($1 is the time).
const unnested = `unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], $12::text[])
  AS x(uid, advisory_id, aliases, summary, artifact_name, component_name, component_type,
    severities, events, latest_event_type, search)`;

/**
 * importAdvisories on PostgreSQL, overriding the shared one (ops/advisories.ts), which takes a
 * round trip or more per advisory: the import is planned in memory, then written in a few
 * statements each way, the advisories' columns as parallel arrays, unnested.
 */
export function createPgAdvisoryImport(db: PgDb): PgOps<"importAdvisories"> {
  const mustHaveGroup = async (sql: Sql, groupUid: string) => {
    if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [groupUid]))) {
      throw notFoundError("group", groupUid);
    }
  };
  // Many advisories in one statement each way: their columns as parallel arrays, unnested.
  const insertAll = async (sql: Sql, groupUid: string, writes: readonly Write[], now: number) => {
    for (let i = 0; i < writes.length; i += batchSize) {
      await sql.run(
        `INSERT INTO advisories (uid, group_uid, advisory_id, aliases, summary, artifact_name,
           component_name, component_type, severities, events, latest_event_type, search,
           create_time, update_time)
         SELECT x.uid, $13, x.advisory_id, x.aliases, x.summary, x.artifact_name,
           x.component_name, x.component_type, x.severities, x.events, x.latest_event_type,
           x.search, $1, $1
         FROM ${unnested}`,
        [now, ...arraysOf(writes.slice(i, i + batchSize)), groupUid],
      );
    }
    await setAliases(sql, writes);
  };
  const replaceAll = async (sql: Sql, writes: readonly Write[], now: number) => {
    for (let i = 0; i < writes.length; i += batchSize) {
      await sql.run(
        `UPDATE advisories AS a SET advisory_id = x.advisory_id, aliases = x.aliases,
           summary = x.summary, artifact_name = x.artifact_name,
           component_name = x.component_name, component_type = x.component_type,
           severities = x.severities, events = x.events,
           latest_event_type = x.latest_event_type, search = x.search, update_time = $1
         FROM ${unnested}
         WHERE a.uid = x.uid`,
        [now, ...arraysOf(writes.slice(i, i + batchSize))],
      );
    }
  };
  // The alias rows of advisories already written, replaced by those of their content.
  const setAliases = async (sql: Sql, writes: readonly Write[]) => {
    for (let i = 0; i < writes.length; i += batchSize) {
      const part = writes.slice(i, i + batchSize);
      await sql.run(
        `DELETE FROM advisory_aliases
         WHERE advisory_seq IN (SELECT seq FROM advisories WHERE uid = ANY($1::text[]))`,
        [part.map((w) => w.uid)],
      );
      const pairs = part.flatMap((w) =>
        (JSON.parse(w.c.aliases) as string[]).map((alias) => [w.uid, alias] as const),
      );
      await sql.run(
        `INSERT INTO advisory_aliases (alias, advisory_seq)
         SELECT x.alias, a.seq FROM unnest($1::text[], $2::text[]) AS x(uid, alias)
           JOIN advisories AS a ON a.uid = x.uid
         ON CONFLICT DO NOTHING`,
        [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
      );
    }
  };
  return {
    importAdvisories: (groupUid, advisories, newUid, now) =>
      db.write(async (sql) => {
        await mustHaveGroup(sql, groupUid);
        const contents = advisories.map(advisoryColumnsOf);
        const stored = await sql.rows<AdvisoryRow>(
          "SELECT * FROM advisories WHERE group_uid = $1 AND advisory_id = ANY($2::text[])",
          [groupUid, [...new Set(contents.map((c) => c.advisoryId))]],
        );
        const plan = await planImport(sql, groupUid, stored, contents, newUid);
        await insertAll(sql, groupUid, plan.inserts, now);
        await replaceAll(sql, plan.replaces, now);
        await setAliases(sql, plan.aliasChanges);
        return plan.outcomes;
      }),
  };
}

/** What an import writes, worked out before writing anything. */
interface ImportPlan {
  outcomes: (PutOutcome | { rejected: string })[];
  inserts: Write[];
  replaces: Write[];
  /** Replaced advisories whose aliases changed. */
  aliasChanges: Write[];
  /** The uids of the inserts, taken for free. */
  newUids: string[];
}

/**
 * Plan an import as SQLite runs it, one advisory after the other, each seeing the ones before
 * it (an advisoryId may come twice). The one thing a plan cannot know without the database is
 * whether a new uid is taken (that advisory is then rejected, alone): the new uids are looked
 * up together, and if one is taken the plan is made again knowing it. The n-th uid asked for
 * stays the n-th `newUid()` answer across plans, so `newUid` is called as SQLite calls it.
 */
async function planImport(
  sql: Sql,
  groupUid: string,
  stored: readonly AdvisoryRow[],
  contents: readonly AdvisoryColumns[],
  newUid: () => string,
): Promise<ImportPlan> {
  const answers: string[] = [];
  const uidAt = (n: number) => {
    while (answers.length <= n) answers.push(newUid());
    return answers[n]!;
  };
  const inDb = new Set<string>();
  const checked = new Set<string>();
  for (;;) {
    const plan = planWith(groupUid, stored, contents, uidAt, inDb);
    const unchecked = plan.newUids.filter((u) => !checked.has(u));
    if (unchecked.length === 0) return plan;
    for (const u of unchecked) checked.add(u);
    const found = await sql.rows<{ uid: string }>(
      "SELECT uid FROM advisories WHERE uid = ANY($1::text[])",
      [unchecked],
    );
    if (found.length === 0) return plan;
    for (const r of found) inDb.add(r.uid);
  }
}

/** One plan, taking the uids in `inDb` as taken and any other as free. */
function planWith(
  groupUid: string,
  stored: readonly AdvisoryRow[],
  contents: readonly AdvisoryColumns[],
  uidAt: (n: number) => string,
  inDb: ReadonlySet<string>,
): ImportPlan {
  interface State extends Write {
    row?: AdvisoryRow;
    changed: boolean;
  }
  const byId = new Map<string, State>(
    stored.map((row) => [
      row.advisory_id,
      { uid: row.uid, c: storedAdvisoryColumns(row), row, changed: false },
    ]),
  );
  const newUids = new Set<string>();
  let asked = 0;
  const outcomes = contents.map((c): PutOutcome | { rejected: string } => {
    const current = byId.get(c.advisoryId);
    if (!current) {
      const uid = uidAt(asked++);
      checkUid(uid, groupUid);
      if (inDb.has(uid) || newUids.has(uid)) return { rejected: taken(uid).message };
      newUids.add(uid);
      byId.set(c.advisoryId, { uid, c, changed: true });
      return "created";
    }
    if (sameAdvisoryContent(current.c, c)) return "unchanged";
    current.c = c;
    current.changed = true;
    return "updated";
  });
  const states = [...byId.values()].filter((s) => s.changed);
  const replaces = states.filter((s) => s.row !== undefined);
  return {
    outcomes,
    inserts: states.filter((s) => s.row === undefined),
    replaces,
    aliasChanges: replaces.filter((s) => s.c.aliases !== s.row!.aliases),
    newUids: [...newUids],
  };
}

/** The unnest arrays of some writes, in the order of `unnested`. */
function arraysOf(writes: readonly Write[]): string[][] {
  const column = (f: (c: AdvisoryColumns) => string) => writes.map((w) => f(w.c));
  return [
    writes.map((w) => w.uid),
    column((c) => c.advisoryId),
    column((c) => c.aliases),
    column((c) => c.summary),
    column((c) => c.artifactName),
    column((c) => c.componentName),
    column((c) => c.componentType),
    column((c) => c.severities),
    column((c) => c.events),
    column((c) => String(c.latest)),
    column((c) => c.search),
  ];
}
