/**
 * The words of the storage contract (store.ts): its error, list queries and pages, and the
 * records of the store's own concepts. Every part of the contract (iam-store.ts,
 * registry-store.ts, ...) imports them from here, and store.ts gathers the parts: no part
 * imports the whole.
 */

/** What went wrong in a store operation, independent of the backend. */
export type StoreErrorKind =
  | "not_found"
  | "already_exists"
  | "not_empty"
  | "failed_precondition"
  | "conflict"
  | "unavailable"
  /** The database's storage is full: nothing was written; retry once space is freed. */
  | "storage_full"
  /** A value the database cannot hold: text with a NUL character (PostgreSQL refuses it). */
  | "invalid_text";

/** StoreError is the only error a Store throws for conditions callers can cause. */
export class StoreError extends Error {
  override name = "StoreError";
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
    /** For `not_empty`: the kind of children that block the delete (groups, repos, ...). */
    readonly childKind?: string,
    /** For `not_empty`: the kind of the parent being deleted (group, repo). */
    readonly parentKind?: string,
    /** For `not_found`: what was missing, which the API error names (google.rpc.ResourceInfo). */
    readonly resource?: MissingResource,
  ) {
    super(message);
  }
}

/** The missing thing of a not_found: its kind (`role binding`) and its key (a uid). */
export interface MissingResource {
  type: string;
  name: string;
}

/** The not_found StoreError of a `type` `name` that is not there: `role binding "<uid>"`. */
export function notFoundError(type: string, name: string): StoreError {
  return new StoreError("not_found", `${type} ${JSON.stringify(name)}`, undefined, undefined, {
    type,
    name,
  });
}

/**
 * A field a List can be ordered by: its proto name (`description`, `advisory_id`). Every
 * List has `name`, `create_time`, `update_time` and `uid`; each resource adds the scalar
 * fields of its message that a column stores (src/list/sort-fields.ts).
 */
export type SortField = string;

/** The sort fields every List has, whatever its resource. */
export const commonSortFields: readonly SortField[] = ["name", "create_time", "update_time", "uid"];

/** A keyset position: the sort value and uid of the last item of the previous page. */
export interface Cursor {
  value: string | number;
  uid: string;
}

/**
 * ListQuery is a validated List request as the list engine hands it to a backend.
 * `F` carries the resource's own filters.
 */
export interface ListQuery<F = Record<string, never>> {
  /**
   * Strictly below this uid, at any depth, in the uid tree: a group's subgroups, and every
   * resource whose group is this one or below it (a resource sits one level below its group).
   */
  descendantsOf?: string;
  /** One level below this uid: a group's direct subgroups, or the resources in that group. */
  childrenOf?: string;
  /**
   * Strictly above this uid in the uid tree: rows whose uid is a proper prefix of it, segment
   * by segment (for groups, the groups above it).
   */
  ancestorsOf?: string;
  /** Only rows at the root of the tree: uids without a `/` (organizations, built-in roles). */
  inRoot?: boolean;
  /** Only rows whose uid is one of these (at least one). */
  ids?: readonly string[];
  /** Exact name. */
  name?: string;
  /** Resource-specific filters. */
  filters: F;
  order: { field: SortField; desc: boolean };
  /** Start strictly after this position in the order. */
  after?: Cursor;
  /** Results to skip after the cursor position. */
  skip: number;
  /** Maximum number of items to return; at least 1. */
  limit: number;
  /**
   * Group uids whose subtrees (the group itself and everything below) the caller may list.
   * Undefined: no restriction. Empty: nothing is visible.
   */
  scope?: readonly string[];
  /**
   * The caller needs no total (an export walking every page): the store skips the count,
   * which costs in proportion to every match rather than to the page, and answers `total` 0.
   */
  noTotal?: boolean;
}

/** One page of results and the count of every match (ignoring cursor, skip and limit). */
export interface ListPage<T> {
  /** At most `limit` items, in the query's order. */
  items: T[];
  /**
   * Every match of the filters and scope, ignoring `after`, `skip` and `limit` (0, not
   * counted, when the query says `noTotal`).
   */
  total: number;
  /** Whether more matches follow the last item (so the list engine mints a next-page token). */
  hasMore: boolean;
}

/** A stored group. */
export interface GroupRecord {
  uid: string;
  /** Empty for a root group (an organization). */
  parentUid: string;
  name: string;
  description: string;
  verified: boolean;
  resourceLimits: Record<string, number>;
  createTime: number;
  updateTime: number;
}

/** Input of createGroup. */
export interface NewGroup {
  uid: string;
  /** Empty for a root group. */
  parentUid: string;
  name: string;
  description: string;
  now: number;
}

/** A change to a group; absent fields keep their value. */
export interface GroupPatch {
  name?: string;
  description?: string;
}

/** A signing key of the token key ring. */
export interface SigningKeyRecord {
  kid: string;
  /** The private JWK, JSON-encoded. */
  privateJwk: string;
  /** The public JWK, JSON-encoded. */
  publicJwk: string;
  createTime: number;
}

/**
 * The built-in roles, as the server hands them to a store when it opens it: the store seeds
 * them (upserted at every open) and keeps every organization's last owner binding, but the
 * catalog is the server's, not the storage layer's.
 */
export interface StoreRoles {
  builtins: readonly {
    uid: string;
    name: string;
    description: string;
    capabilities: readonly string[];
  }[];
  /** The owner role, which the last-owner rule protects. */
  ownerRoleUid: string;
}
