/**
 * The storage contract of Gatehouse: coarse domain operations, each atomic on its own.
 *
 * Backends (SQLite today, PostgreSQL later) implement `Store` and must pass the shared suite in
 * `test/store/store-suite.ts`. They throw `StoreError` for every expected failure and never let
 * a driver error escape for a condition a caller can cause.
 *
 * Times are milliseconds since the Unix epoch. An update whose patch sets no field changes
 * nothing, update time included, and returns the record as it is (or throws `not_found`).
 *
 * Invariants, and what keeps them when several stores (replicas) share one database:
 * - Each operation is atomic and checks its own preconditions in its transaction: a group's
 *   parent exists and no sibling has its name; a group is deleted only without children (so
 *   a create under a group racing its delete either sees the group or fails); an
 *   organization keeps one owner binding at its root (the last-owner rule); a refresh token
 *   or code is used once; an invite is redeemed within its uses.
 * - A handler that reads, checks and then writes (the escalation rules: a grant needs every
 *   capability it grants, held at the group at commit) runs the whole sequence in
 *   `atomically`, reading through the store it is handed.
 * - SQLite keeps both with its single writer: a write transaction is BEGIN IMMEDIATE, and
 *   `atomically` holds the one connection for its whole callback, other calls waiting.
 *   PostgreSQL runs every write, and every `atomically`, as a SERIALIZABLE transaction, retried
 *   from the start on a serialization failure (a retry re-runs the checks, so it never
 *   duplicates a write). A reader never waits for a writer on either.
 * - The access queries may be cached, but never answer from before a commit that the caller
 *   could have seen: SQLite checks its change counters before each lookup; PostgreSQL follows
 *   a change feed (docs/postgres.md states the bound across replicas).
 */

import type { AuditScope } from "../events/audit-scope.js";
import type { AccessRequestStore } from "./access-request-store.js";
import type { AdvisoryStore } from "./advisory-store.js";
import type { DeviceCodeStore } from "./device-code-store.js";
import type { EventStore } from "./event-store.js";
import type { IamStore } from "./iam-store.js";
import type { InviteStore } from "./invite-store.js";
import type { OAuthStore } from "./oauth-store.js";
import type { PeopleStore } from "./people-store.js";
import type { RegistryStore } from "./registry-store.js";
import type { ScimStore } from "./scim-store.js";
import type { SignInUpkeepStore } from "./sign-in-upkeep-store.js";
import type { SubscriptionStore } from "./subscription-store.js";
import type { TeamStore } from "./team-store.js";
import type {
  GroupPatch,
  GroupRecord,
  ListPage,
  ListQuery,
  NewGroup,
  SigningKeyRecord,
} from "./vocabulary.js";

export * from "./vocabulary.js";

/** Store is the whole persistence contract of Gatehouse. */
export interface Store
  extends IamStore,
    InviteStore,
    AccessRequestStore,
    OAuthStore,
    DeviceCodeStore,
    PeopleStore,
    SignInUpkeepStore,
    RegistryStore,
    AdvisoryStore,
    EventStore,
    SubscriptionStore,
    ScimStore,
    TeamStore {
  /**
   * Check that the database answers, within `timeoutMs` if given; throws StoreError
   * `unavailable` otherwise, and `storage_full` for 30 s after a write was refused for lack of
   * space (or until a write succeeds again).
   */
  ping(opts?: { timeoutMs?: number }): Promise<void>;
  /**
   * Run `fn` with a store whose every operation is part of one transaction, committed when
   * `fn` resolves and rolled back when it throws. What `fn` reads through `tx` (access queries
   * included, never from a cache) still holds when its writes through `tx` commit. `fn` may
   * run more than once (a retried transaction): it must have no effect but its calls on `tx`.
   * Calls on `tx` after `fn` settled are a bug.
   */
  atomically<R>(fn: (tx: Store) => Promise<R>): Promise<R>;
  /**
   * This store, for one call that changes something: each change made through it (a write that
   * is not bookkeeping, Behaviour in ops/operation.ts) appends the call's event in its own
   * transaction, once per call (`provenance.recorded`), with the actor, the request and the
   * reason `provenance` carries. Reads and the store's own upkeep are the store's. The store
   * knows who made a change only from this: nothing ambient.
   */
  recording(provenance: AuditScope): Store;
  /** Close the database; further calls throw StoreError `unavailable`. Idempotent. */
  close(): Promise<void>;
  /** How often the access cache answered (hits) or asked the database (misses), so far. */
  accessCacheCounts(): { hits: number; misses: number };

  /**
   * Create a group, and its closure rows (depth 0 included). `uid` must be a root uid (when
   * `parentUid` is empty) or a direct child uid of `parentUid`: tree filters rely on uids
   * embedding the path, so anything else is a bug and is refused with a plain Error.
   * Throws `not_found` if the parent does not exist, `already_exists` if a sibling has the name
   * or the uid is taken. Root groups (organizations) may share a name.
   */
  createGroup(group: NewGroup): Promise<GroupRecord>;
  /** Get a group, or undefined. */
  getGroup(uid: string): Promise<GroupRecord | undefined>;
  /**
   * Change a group's name or description and set updateTime. An organization renamed takes
   * the new name's registry namespace (and keeps its old ones).
   * Throws `not_found` if it does not exist, `already_exists` if a sibling has the new name
   * or, for an organization, another organization holds the new name's registry namespace.
   */
  updateGroup(uid: string, patch: GroupPatch, now: number): Promise<GroupRecord>;
  /**
   * Delete a group and what lives only in it (role bindings, invites, account association,
   * advisories). Throws `not_found` if it does not exist; `not_empty` (childKind repos,
   * groups, identities, roles or identityProviders) if it still has such children.
   */
  deleteGroup(uid: string): Promise<void>;
  /**
   * The uids from the root down to the group itself (read from the closure rows), or an empty
   * array if the group does not exist.
   */
  getGroupPath(uid: string): Promise<string[]>;
  /**
   * The organization (root group) holding the registry namespace `name` (a registry name's
   * first component), or undefined if nobody holds it. An organization takes the namespace
   * of its name at creation or rename when nobody holds it, keeps it across renames and lets
   * it go only when it is deleted; organization names are not unique, namespaces are.
   */
  findOrganization(name: string): Promise<GroupRecord | undefined>;
  /**
   * List groups. descendantsOf: strictly below, at any depth; childrenOf: one level below;
   * scope: the group is at or below one of the scope uids.
   */
  listGroups(query: ListQuery): Promise<ListPage<GroupRecord>>;

  /** All signing keys, oldest first. */
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Add a signing key; throws `already_exists` if the kid is taken. */
  addSigningKey(key: SigningKeyRecord): Promise<void>;
  /** Delete signing keys created before `time` except the newest one. */
  pruneSigningKeys(before: number): Promise<void>;
  /**
   * Set a signing key's createTime (when it starts signing): promotes a pending next key.
   * Throws `not_found`.
   */
  setSigningKeyTime(kid: string, createTime: number): Promise<void>;

  /**
   * Get the named server secret, creating it with `create()` if absent. Concurrent callers on
   * one database all get the same value.
   */
  getOrCreateSecret(name: string, create: () => Buffer): Promise<Buffer>;
  /** A setting the server recorded (not a secret), or undefined. */
  getSetting(name: string): Promise<string | undefined>;
  /** Record a setting, replacing any earlier value. */
  putSetting(name: string, value: string): Promise<void>;
}
