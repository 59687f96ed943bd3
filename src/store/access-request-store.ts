/**
 * The storage contract of access requests: an identity's request for a role at a group for a
 * while, and its answer. Part of `Store`; the same rules hold (atomic operations, StoreError
 * for what a caller can cause, times in ms since the epoch).
 */
import type { RoleBindingRecord } from "./iam-store.js";
import type { ListPage, ListQuery } from "./vocabulary.js";

/** Where a request stands, as stored; a `pending` one past its expiration time has lapsed. */
export type StoredRequestState = "pending" | "approved" | "denied" | "expired";

/** A stored access request, hydrated with what it names. */
export interface AccessRequestRecord {
  uid: string;
  /** The group asked about: its uid's parent. */
  groupUid: string;
  group: { uid: string; name: string; description: string };
  roleUid: string;
  role: { uid: string; name: string; description: string };
  requesterUid: string;
  requester: { uid: string; name: string; description: string; subject: string; issuer: string };
  /** How long an approval binds, in ms. */
  durationMs: number;
  reason: string;
  state: StoredRequestState;
  /** When a pending request lapses. */
  expirationTime: number;
  /** Who approved or denied it; "" otherwise. */
  reviewerUid: string;
  reviewReason: string;
  /** The binding an approval made or extended; "" otherwise. */
  roleBindingUid: string;
  /** The approved binding's expiry; undefined unless approved. */
  grantExpireTime?: number;
  createTime: number;
  updateTime: number;
}

/** Input of createAccessRequest. `uid` must be a direct child uid of `groupUid`. */
export interface NewAccessRequest {
  uid: string;
  groupUid: string;
  roleUid: string;
  requesterUid: string;
  durationMs: number;
  reason: string;
  expirationTime: number;
  now: number;
}

/** The filters of listAccessRequests: a state, judged at `now` (a lapsed pending is expired). */
export interface AccessRequestFilters {
  state?: StoredRequestState;
  now?: number;
}

/** Input of decideAccessRequest. */
export interface AccessRequestDecision {
  uid: string;
  decision: "approved" | "denied";
  reviewerUid: string;
  reason: string;
  /** The uid of a new binding at the request's group, if an approval creates one. */
  bindingUid: (groupUid: string) => string;
  now: number;
}

/**
 * What a decision did: `approved` with the binding it created or extended; `denied`; or
 * `not_pending` with the request as it stands (answered already, or lapsed); `not_found`.
 */
export type DecisionOutcome =
  | { kind: "approved"; request: AccessRequestRecord; binding: RoleBindingRecord }
  | { kind: "denied"; request: AccessRequestRecord }
  | { kind: "not_pending"; request: AccessRequestRecord }
  | { kind: "not_found" };

/** What expireAccessRequest did: `expired` when it marked the lapsed request so. */
export type RequestExpiry = { kind: "expired"; request: AccessRequestRecord } | { kind: "absent" };

/** AccessRequestStore is the part of Store that holds access requests. */
export interface AccessRequestStore {
  /**
   * Create a request. Throws `not_found` if its group, role or requester does not exist,
   * `already_exists` if the uid is taken.
   */
  createAccessRequest(request: NewAccessRequest): Promise<AccessRequestRecord>;
  /** Get a request, or undefined. */
  getAccessRequest(uid: string): Promise<AccessRequestRecord | undefined>;
  /** A page of requests. */
  listAccessRequests(
    query: ListQuery<AccessRequestFilters>,
  ): Promise<ListPage<AccessRequestRecord>>;
  /**
   * Answer a pending, unlapsed request, in one transaction: an approval binds the requester
   * with the role at the group until `now` plus the request's duration (a binding it already
   * holds there is kept if it lasts longer, else extended).
   */
  decideAccessRequest(decision: AccessRequestDecision): Promise<DecisionOutcome>;
  /** Uids of pending requests lapsed at `now`, oldest first, at most `limit`. */
  lapsedAccessRequests(now: number, limit: number): Promise<readonly string[]>;
  /** Mark a lapsed pending request expired; `absent` if it is not (any more). */
  expireAccessRequest(uid: string, now: number): Promise<RequestExpiry>;
}
