/**
 * The storage contract of vulnerability advisories. Part of `Store`; the same rules hold
 * (atomic operations, StoreError for what a caller can cause, times in ms since the epoch).
 */
import type { PutOutcome } from "./registry-store.js";
import type { ListPage, ListQuery } from "./vocabulary.js";

/** What happened to an advisory; the numbers are those of the API's EventType. */
export type EventTypeNumber = 1 | 2 | 3 | 4 | 5 | 6 | 7;

/** One step in an advisory's history. */
export interface AdvisoryEvent {
  /** 0 when unknown (an imported record that does not say); such events sort first. */
  time: number;
  type: EventTypeNumber;
  note: string;
  fixedVersion: string;
}

/** One scoring of an advisory. */
export interface AdvisorySeverity {
  type: string;
  score: string;
}

/** The content of an advisory: what a caller writes. */
export interface AdvisoryContent {
  advisoryId: string;
  aliases: string[];
  summary: string;
  artifactName: string;
  componentName: string;
  componentType: string;
  severities: AdvisorySeverity[];
  /** In any order on input; stored and returned in time order (stable for equal times). */
  events: AdvisoryEvent[];
}

/** A stored advisory. */
export interface AdvisoryRecord extends AdvisoryContent {
  uid: string;
  /** The group the advisory belongs to: its uid's parent. */
  groupUid: string;
  /** The type of the newest event; 0 when there are no events. */
  latestEventType: EventTypeNumber | 0;
  createTime: number;
  updateTime: number;
}

/** A change to an advisory; absent fields keep their value. */
export type AdvisoryPatch = Partial<AdvisoryContent>;

/** Resource filters of listAdvisories (absent: no filter); all present ones must hold. */
export interface AdvisoryFilters {
  /** The advisory has this alias (exact). */
  alias?: string;
  artifactName?: string;
  componentName?: string;
  latestEventType?: number;
  /**
   * Case-insensitive substring of the advisory id, an alias, the artifact name or the
   * component name (never across two of them).
   */
  query?: string;
}

/** AdvisoryStore is the part of Store that holds vulnerability advisories. */
export interface AdvisoryStore {
  /**
   * Create an advisory. `uid` must be a direct child of `groupUid` (a plain Error otherwise).
   * Throws `not_found` if the group does not exist, `already_exists` if the group has an
   * advisory with that advisoryId or the uid is taken.
   */
  createAdvisory(
    uid: string,
    groupUid: string,
    content: AdvisoryContent,
    now: number,
  ): Promise<AdvisoryRecord>;
  /** Get an advisory, or undefined. */
  getAdvisory(uid: string): Promise<AdvisoryRecord | undefined>;
  /**
   * Change an advisory and set updateTime; latestEventType follows the events. Throws
   * `not_found`; `already_exists` if another advisory of the group has the new advisoryId.
   */
  updateAdvisory(uid: string, patch: AdvisoryPatch, now: number): Promise<AdvisoryRecord>;
  /** Delete an advisory. Throws `not_found`. */
  deleteAdvisory(uid: string): Promise<void>;
  /** List advisories; the `name` filter and sort field are the advisoryId. */
  listAdvisories(query: ListQuery<AdvisoryFilters>): Promise<ListPage<AdvisoryRecord>>;
  /**
   * Upsert advisories by advisoryId within a group, in one transaction, for imports: a new
   * advisoryId is created (uid from `newUid`), an existing one whose content differs is
   * replaced (uid and createTime kept, updateTime `now`), an identical one is left untouched.
   * Each advisory is all or nothing: one that fails is `rejected` with the reason and the
   * others still apply. Throws `not_found` if the group does not exist.
   */
  importAdvisories(
    groupUid: string,
    advisories: readonly AdvisoryContent[],
    newUid: () => string,
    now: number,
  ): Promise<(PutOutcome | { rejected: string })[]>;
}
