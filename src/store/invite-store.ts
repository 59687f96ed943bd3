/**
 * The storage contract of group invites: a code that binds whoever redeems it with a role at a
 * group. Part of `Store`; the same rules hold (atomic operations, StoreError for what a caller
 * can cause, times in ms since the epoch). The store never sees a code, only its hash.
 */
import type { RoleBindingRecord } from "./iam-store.js";
import type { ListPage, ListQuery } from "./vocabulary.js";

/** A stored group invite, hydrated with its role's summary. */
export interface GroupInviteRecord {
  uid: string;
  /** The group the invite joins: its uid's parent. */
  groupUid: string;
  roleUid: string;
  role: { uid: string; name: string; description: string };
  /** The verified email a redeemer must have; "" for anyone. */
  email: string;
  singleUse: boolean;
  expirationTime: number;
  /** The identity that created the invite; "" for invites older than this record. */
  creatorUid: string;
  createTime: number;
  updateTime: number;
}

/** Input of createGroupInvite. `uid` must be a direct child uid of `groupUid`. */
export interface NewGroupInvite {
  uid: string;
  groupUid: string;
  roleUid: string;
  email: string;
  singleUse: boolean;
  /** The SHA-256 of the code, hex; unique among invites. */
  codeHash: string;
  /** The identity creating the invite. */
  creatorUid: string;
  expirationTime: number;
  now: number;
}

/** A change to an invite; absent fields keep their value. */
export interface GroupInvitePatch {
  email?: string;
  singleUse?: boolean;
  expirationTime?: number;
}

/** Input of redeemGroupInvite. */
export interface InviteRedemption {
  codeHash: string;
  /** The redeeming identity. */
  identityUid: string;
  /** The redeemer's verified email, or "" if it has none. */
  email: string;
  /** The uid of the binding if one is created: a direct child uid of `groupOf(codeHash)`. */
  bindingUid: (groupUid: string) => string;
  now: number;
}

/**
 * What a redemption did: `redeemed` with the binding (`created` false when the identity
 * already had exactly this binding); `not_found` for an unknown or expired code;
 * `email_mismatch` when the invite names an email the redeemer does not have.
 */
export type RedeemOutcome =
  | { kind: "redeemed"; binding: RoleBindingRecord; created: boolean }
  | { kind: "not_found" }
  | { kind: "email_mismatch" };

/** InviteStore is the part of Store that holds group invites. */
export interface InviteStore {
  /**
   * Create an invite. Throws `not_found` if its group or role does not exist,
   * `already_exists` if the uid or the code hash is taken.
   */
  createGroupInvite(invite: NewGroupInvite): Promise<GroupInviteRecord>;
  /** Get an invite, or undefined. */
  getGroupInvite(uid: string): Promise<GroupInviteRecord | undefined>;
  /** The invite whose code has this hash, expired or not, or undefined. */
  findGroupInviteByCode(codeHash: string): Promise<GroupInviteRecord | undefined>;
  /** Change an invite and set updateTime. Throws `not_found`. */
  updateGroupInvite(uid: string, patch: GroupInvitePatch, now: number): Promise<GroupInviteRecord>;
  /** Delete an invite. Throws `not_found`. */
  deleteGroupInvite(uid: string): Promise<void>;
  /**
   * List invites; the tree filters and scope apply to the invite's group. An invite has no
   * name of its own: the `name` filter and order use its role's name.
   */
  listGroupInvites(query: ListQuery): Promise<ListPage<GroupInviteRecord>>;
  /**
   * Redeem a code in one transaction: find the invite by hash, refuse it if it expired at
   * `now` or names another email (compared case-insensitively), delete it if single-use, and
   * bind the identity with its role at its group unless that very binding exists. Concurrent
   * redemptions of a single-use code succeed once. Throws `not_found` if the identity is gone.
   */
  redeemGroupInvite(redemption: InviteRedemption): Promise<RedeemOutcome>;
}
