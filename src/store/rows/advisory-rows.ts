import type {
  AdvisoryContent,
  AdvisoryFilters,
  AdvisoryPatch,
  AdvisoryRecord,
  EventTypeNumber,
} from "../advisory-store.js";
import type { ListClause } from "../list-clauses.js";
import { declareResource } from "./resource.js";

/** An advisories row as both backends store it (JSON columns as text). */
export interface AdvisoryRow {
  seq: number;
  uid: string;
  group_uid: string;
  advisory_id: string;
  aliases: string;
  summary: string;
  artifact_name: string;
  component_name: string;
  component_type: string;
  severities: string;
  events: string;
  latest_event_type: number;
  search: string;
  create_time: number;
  update_time: number;
}

/** The columns an advisory's content is stored in, as written (bound parameters). */
export interface AdvisoryColumns {
  advisoryId: string;
  aliases: string;
  summary: string;
  artifactName: string;
  componentName: string;
  componentType: string;
  severities: string;
  events: string;
  latest: number;
  search: string;
}

/** The content columns of a row, as insertRow and updateStored write them. */
export function advisoryRowOf(c: AdvisoryColumns) {
  return {
    advisory_id: c.advisoryId,
    aliases: c.aliases,
    summary: c.summary,
    artifact_name: c.artifactName,
    component_name: c.componentName,
    component_type: c.componentType,
    severities: c.severities,
    events: c.events,
    latest_event_type: c.latest,
    search: c.search,
  };
}

/** Content as stored: events in time order (stable), the derived latest type and search text. */
export function advisoryColumnsOf(c: AdvisoryContent): AdvisoryColumns {
  const events = c.events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.time - b.e.time || a.i - b.i)
    .map(({ e }) => ({
      time: e.time,
      type: e.type,
      note: e.note,
      fixedVersion: e.fixedVersion,
    }));
  return {
    advisoryId: c.advisoryId,
    aliases: JSON.stringify(c.aliases),
    summary: c.summary,
    artifactName: c.artifactName,
    componentName: c.componentName,
    componentType: c.componentType,
    severities: JSON.stringify(c.severities.map((s) => ({ type: s.type, score: s.score }))),
    events: JSON.stringify(events),
    latest: events.at(-1)?.type ?? 0,
    search: [c.advisoryId, ...c.aliases, c.artifactName, c.componentName]
      .map((s) => s.toLowerCase())
      .join("\n"),
  };
}

/** The content columns of a stored row, to compare with new content. */
export function storedAdvisoryColumns(row: AdvisoryRow): AdvisoryColumns {
  return {
    advisoryId: row.advisory_id,
    aliases: row.aliases,
    summary: row.summary,
    artifactName: row.artifact_name,
    componentName: row.component_name,
    componentType: row.component_type,
    severities: row.severities,
    events: row.events,
    latest: row.latest_event_type,
    search: row.search,
  };
}

/** Whether two contents are the same (the derived columns follow from the others). */
export function sameAdvisoryContent(a: AdvisoryColumns, b: AdvisoryColumns): boolean {
  return (
    a.advisoryId === b.advisoryId &&
    a.aliases === b.aliases &&
    a.summary === b.summary &&
    a.artifactName === b.artifactName &&
    a.componentName === b.componentName &&
    a.componentType === b.componentType &&
    a.severities === b.severities &&
    a.events === b.events
  );
}

/** The fields a patch sets: spread over content, an unset field keeps the stored value. */
export function definedOf(patch: AdvisoryPatch): AdvisoryPatch {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
}

/** The content of a stored advisory. */
export function advisoryContentOf(row: AdvisoryRow): AdvisoryContent {
  return {
    advisoryId: row.advisory_id,
    aliases: JSON.parse(row.aliases) as string[],
    summary: row.summary,
    artifactName: row.artifact_name,
    componentName: row.component_name,
    componentType: row.component_type,
    severities: JSON.parse(row.severities) as AdvisoryContent["severities"],
    events: JSON.parse(row.events) as AdvisoryContent["events"],
  };
}

/** The record of a stored advisory. */
export function advisoryRecordOf(row: AdvisoryRow): AdvisoryRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    ...advisoryContentOf(row),
    latestEventType: row.latest_event_type as EventTypeNumber | 0,
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/**
 * An advisory's storage: a child of its group, deleted with it. Advisories are data about a
 * group, imported for it: they go with it, as bindings do, so that an owner (who holds no
 * advisory write capability) can always delete a group. Its aliases are also rows of
 * advisory_aliases (ON DELETE CASCADE), the alias filter's index.
 */
export const advisories = declareResource<AdvisoryRow, AdvisoryRecord>({
  kind: "advisory",
  collection: "advisories",
  message: "gatehouse.vulnerabilities.v2beta1.Advisory",
  table: "advisories",
  columns: {
    seq: { internal: "the rowid SQLite's trigram index refers to", generated: true },
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    advisory_id: { field: "advisory_id", updated: true },
    aliases: { field: "aliases", updated: true },
    summary: { field: "summary", updated: true },
    artifact_name: { field: "artifact_name", updated: true },
    component_name: { field: "component_name", updated: true },
    component_type: { field: "component_type", updated: true },
    severities: { field: "severities", updated: true },
    events: { field: "events", updated: true },
    latest_event_type: { field: "latest_event_type", updated: true },
    // The lowercased id, aliases, artifact and component names, one a line: a substring
    // search never spans two.
    search: { internal: "what the substring search reads", updated: true },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "cascade" },
  list: { name: "advisory_id" },
  recordOf: advisoryRecordOf,
});

/** Where the list SQL of either backend finds the columns of advisories. */
export const advisoryListColumns = advisories.listColumns;

/**
 * The list conditions of an advisory query's filters that read the same on both backends; each
 * adds its own for `query`, a substring search in its own way, after these.
 */
export function advisoryColumnConditions(f: AdvisoryFilters): ListClause[] {
  const out: ListClause[] = [];
  if (f.alias !== undefined) {
    out.push({
      sql: "t.seq IN (SELECT a.advisory_seq FROM advisory_aliases AS a WHERE a.alias = ?)",
      params: [f.alias],
    });
  }
  if (f.artifactName !== undefined) {
    out.push({ sql: "t.artifact_name = ?", params: [f.artifactName] });
  }
  if (f.componentName !== undefined) {
    out.push({ sql: "t.component_name = ?", params: [f.componentName] });
  }
  if (f.latestEventType !== undefined) {
    out.push({ sql: "t.latest_event_type = ?", params: [f.latestEventType] });
  }
  return out;
}
