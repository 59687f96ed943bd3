/**
 * The storage contract of the registry: repos in groups and the tags of a repo. Part of
 * `Store`; the same rules hold (atomic operations, StoreError for what a caller can cause,
 * times in ms since the epoch).
 */
import type { ListPage, ListQuery } from "./vocabulary.js";

/** A stored repo. */
export interface RepoRecord {
  uid: string;
  /** The group the repo lives in: its uid's parent. */
  groupUid: string;
  name: string;
  description: string;
  aliases: string[];
  /** Anyone may pull the repo's images, without credentials. */
  public: boolean;
  createTime: number;
  updateTime: number;
}

/** Input of createRepo. `uid` must be a direct child uid of `groupUid`. */
export interface NewRepo {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  aliases: string[];
  /** Default false. */
  public?: boolean;
  now: number;
}

/** A change to a repo; absent fields keep their value. */
export interface RepoPatch {
  name?: string;
  description?: string;
  aliases?: string[];
  public?: boolean;
}

/** A stored tag: one per (repo, name). */
export interface TagRecord {
  uid: string;
  /** The repo the tag lives in: its uid's parent. */
  repoUid: string;
  name: string;
  /** `sha256:` and 64 hex characters. */
  digest: string;
  deprecated: boolean;
  createTime: number;
  /** When the tag was created or last moved. */
  updateTime: number;
}

/** Input of putTag and importTags. */
export interface NewTag {
  name: string;
  digest: string;
  deprecated: boolean;
}

/** What putting a tag did. */
export type PutOutcome = "created" | "updated" | "unchanged";

/** Resource filters of listTags (absent: no filter). */
export interface TagFilters {
  /** Exact digest. */
  digest?: string;
  /** Only tags whose updateTime is at or after this time. */
  updatedSince?: number;
  /** Hide referrer tags, whose name starts with `sha256-`. */
  excludeReferrers?: boolean;
}

/** RegistryStore is the part of Store that holds repos and tags. */
export interface RegistryStore {
  /**
   * The repo a registry name addresses, given as its components (`acme/team/api`: `["acme",
   * "team", "api"]`, at least two), or undefined. The first component is a registry namespace
   * (findOrganization); the rest is read from its organization down: first as a repo name of
   * the organization itself (repo names may hold `/`), then, if the next component names a
   * subgroup, as a repo of that subgroup, and so on; the repo highest in the tree wins. One
   * query, whatever the depth of the name.
   */
  resolveRegistryName(parts: readonly string[]): Promise<RepoRecord | undefined>;
  /**
   * Create a repo. `uid` must be a direct child of `groupUid` (a plain Error otherwise: a bug).
   * Throws `not_found` if the group does not exist, `already_exists` if the group has a repo of
   * that name or the uid is taken.
   */
  createRepo(repo: NewRepo): Promise<RepoRecord>;
  /** Get a repo, or undefined. */
  getRepo(uid: string): Promise<RepoRecord | undefined>;
  /**
   * Change a repo and set updateTime. Throws `not_found`; `already_exists` if another repo of
   * the group has the new name.
   */
  updateRepo(uid: string, patch: RepoPatch, now: number): Promise<RepoRecord>;
  /**
   * Delete a repo. Throws `not_found`; `not_empty` (childKind tags, parentKind repo) while it
   * has tags.
   */
  deleteRepo(uid: string): Promise<void>;
  /** List repos; the tree filters and scope apply to the repo's group. */
  listRepos(query: ListQuery): Promise<ListPage<RepoRecord>>;

  /**
   * Create the tag `tag.name` in a repo, or move the existing one: its digest and deprecated
   * flag are replaced and updateTime set to `now` (a re-push refreshes it even when the digest
   * is the same). The uid and createTime of an existing tag stay. `newUid` (a direct child of
   * the repo's uid) is used only when the tag is created. Throws `not_found` if the repo does
   * not exist.
   */
  /**
   * Apply a registry push of `tag` at `time`: create the tag, or move it to the pushed digest
   * (updateTime: `time`), or change nothing when it already has that digest or moved after
   * `time` (a redelivered or stale event). Decided in one transaction, so concurrent pushes of
   * a new tag make one `created` and then `updated` or `unchanged`; the outcome is `kind`.
   * Throws `not_found` if the repo does not exist.
   */
  pushTag(
    repoUid: string,
    tag: NewTag,
    newUid: () => string,
    time: number,
  ): Promise<{ kind: PutOutcome; tag: TagRecord }>;
  putTag(
    repoUid: string,
    tag: NewTag,
    newUid: () => string,
    now: number,
  ): Promise<{ tag: TagRecord; outcome: "created" | "updated" }>;
  /**
   * Put many tags into one repo in one transaction, for imports: like putTag, except that a
   * tag whose digest and deprecated flag are already as given is left untouched
   * (`unchanged`, updateTime kept), so that importing the same records twice changes nothing.
   * Returns one outcome per tag, in order. Throws `not_found` if the repo does not exist.
   */
  importTags(
    repoUid: string,
    tags: readonly NewTag[],
    newUid: () => string,
    now: number,
  ): Promise<PutOutcome[]>;
  /** Get a tag, or undefined. */
  getTag(uid: string): Promise<TagRecord | undefined>;
  /** Delete a tag. Throws `not_found`. */
  deleteTag(uid: string): Promise<void>;
  /**
   * List tags. descendantsOf and childrenOf work on tag uids (a tag is one level below its
   * repo, two below its group: `descendantsOf G` holds the tags of every repo at or below G,
   * `childrenOf R` the tags of repo R); scope applies to the repo's group.
   */
  listTags(query: ListQuery<TagFilters>): Promise<ListPage<TagRecord>>;
}
