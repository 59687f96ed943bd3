/**
 * The storage of SCIM 2.0 provisioning (RFC 7643/7644, src/scim/): an organization's SCIM
 * connection (the hash of its bearer token: the token itself is shown once and never stored)
 * and its SCIM users, the directory's view of the organization's people. A SCIM user is
 * matched to the person who signs in through one of the organization's identity providers
 * (its externalId is the provider's subject) or, failing that, by a verified email.
 *
 * Deprovisioning (a user made inactive, or deleted) is one transaction: the matched person's
 * sessions are revoked, every token issued to them before now stops working (a token cutoff,
 * read through the access caches, so on every replica), and their role bindings in the
 * organization go. Nothing of it comes back when the user is made active again.
 */
export interface ScimStore {
  /**
   * Create or replace the SCIM connection of organization `orgUid` (a rotation: the old token
   * stops working in the same commit). Throws `not_found` if there is no such organization,
   * `failed_precondition` if the uid is not an organization's (a root group's).
   */
  putScimConnection(c: NewScimConnection): Promise<ScimConnectionRecord>;
  /** The organization's SCIM connection, or undefined. */
  getScimConnection(orgUid: string): Promise<ScimConnectionRecord | undefined>;
  /** The organization whose SCIM token has this hash, or undefined. */
  findScimConnection(tokenHash: string): Promise<ScimConnectionRecord | undefined>;
  /** Revoke the organization's SCIM connection; throws `not_found` if it has none. */
  deleteScimConnection(orgUid: string): Promise<void>;
  /** Record that the connection was used at `time` (upkeep, no event). */
  touchScimConnection(orgUid: string, time: number): Promise<void>;

  /**
   * Create a SCIM user. Throws `already_exists` if the organization has a user of that
   * userName (compared without case), `not_found` if it has no SCIM connection.
   */
  createScimUser(u: ScimUserWrite): Promise<ScimUserRecord>;
  /** A SCIM user of the organization, or undefined. */
  getScimUser(orgUid: string, id: string): Promise<ScimUserRecord | undefined>;
  /**
   * The organization's SCIM users (oldest first) that the narrowing finds: all of them, or
   * those of one userName (without case), externalId or email (without case); at most
   * `limit`, after skipping `offset`.
   */
  listScimUsers(
    orgUid: string,
    narrow: ScimUserNarrowing,
    limit: number,
    offset: number,
  ): Promise<ScimUserRecord[]>;
  /** How many SCIM users the narrowing finds. */
  countScimUsers(orgUid: string, narrow: ScimUserNarrowing): Promise<number>;
  /**
   * Replace a SCIM user's attributes (PUT, or a PATCH applied). When `expectVersion` is given
   * and the user's version differs, throws `conflict` (an ETag mismatch). A user made inactive
   * is deprovisioned (see the top of this file). Throws `not_found`, `already_exists` (another
   * user has the userName) or `failed_precondition` (the person is the organization's last
   * owner).
   */
  replaceScimUser(u: ScimUserWrite, expectVersion?: number): Promise<ScimUserRecord>;
  /**
   * Deprovision a SCIM user and delete it; the audit trail keeps what was done. Throws
   * `not_found` or `failed_precondition` (the organization's last owner).
   */
  deleteScimUser(
    orgUid: string,
    id: string,
    now: number,
    personUids: readonly string[],
  ): Promise<void>;
  /**
   * Create a SCIM Group: a team at the organization's root (named its displayName) with the
   * given members (SCIM user ids). Throws `already_exists` if a team there has the name,
   * `not_found` if a member is no SCIM user of the organization or it has no SCIM connection.
   */
  createScimGroup(g: ScimGroupWrite): Promise<ScimGroupRecord>;
  /** A SCIM Group of the organization (its id: the team uid's last segment), or undefined. */
  getScimGroup(orgUid: string, id: string): Promise<ScimGroupRecord | undefined>;
  /** The organization's SCIM Groups (oldest first) the narrowing finds, as listScimUsers. */
  listScimGroups(
    orgUid: string,
    narrow: ScimGroupNarrowing,
    limit: number,
    offset: number,
  ): Promise<ScimGroupRecord[]>;
  /** How many SCIM Groups the narrowing finds. */
  countScimGroups(orgUid: string, narrow: ScimGroupNarrowing): Promise<number>;
  /**
   * Replace a SCIM Group's name, externalId and members (PUT, or a PATCH applied): a member
   * removed leaves the team at once, a member added joins it (if active and matched). Throws
   * as createScimGroup, and `conflict` on a stale `expectVersion`.
   */
  replaceScimGroup(g: ScimGroupWrite, expectVersion?: number): Promise<ScimGroupRecord>;
  /** Delete a SCIM Group and its team (the access it gave ends). Throws `not_found`. */
  deleteScimGroup(orgUid: string, id: string): Promise<void>;
  /** The SCIM Groups a SCIM user is a member of: id and name. */
  scimGroupsOfUser(orgUid: string, userId: string): Promise<{ id: string; name: string }[]>;
  /**
   * What the organization's directory says of a person (src/scim/scim-standing.ts), by the
   * strongest key that finds a SCIM user or a deleted one's tombstone: the user matched to
   * `identityUid`, else one whose externalId is `externalId` (the person's subject at one of
   * the organization's providers; "" for none), else one whose email is `email` (a verified
   * email; "" for none). `active` if such a user is active, else `inactive`, else `deleted`
   * (only tombstones); `unknown` if no key finds any (the directory does not manage them).
   */
  scimStanding(orgUid: string, person: ScimPersonKeys): Promise<ScimStanding>;
  /**
   * When the tokens of identity `uid` were last cut off (milliseconds), or 0: a token issued
   * at or before it is refused. Read through the access caches.
   */
  tokenCutoff(uid: string): Promise<number>;
}

/** Input of putScimConnection. */
export interface NewScimConnection {
  orgUid: string;
  /** The SHA-256 of the bearer token, hex. */
  tokenHash: string;
  creatorUid: string;
  now: number;
}

/** An organization's SCIM connection, without its token. */
export interface ScimConnectionRecord {
  /** The connection's uid: its organization's (an organization has one), its events' subject. */
  uid: string;
  orgUid: string;
  creatorUid: string;
  createTime: number;
  /** When a SCIM client last used its token (the connection's creation until then). */
  useTime: number;
}

/** What a SCIM user is written with: its attributes as the SCIM plane checked them. */
export interface ScimUserWrite {
  orgUid: string;
  id: string;
  userName: string;
  externalId: string;
  displayName: string;
  /** The email the person is matched by, "" for none. */
  email: string;
  active: boolean;
  /**
   * The uids the person would have signing in through each of the organization's identity
   * providers with the externalId as subject (src/auth/login/person.ts): the match by subject.
   */
  personUids: readonly string[];
  /** Every stored attribute (name, emails, ...), as JSON-able data. */
  attributes: Readonly<Record<string, unknown>>;
  now: number;
}

/** A stored SCIM user. */
export interface ScimUserRecord extends Omit<ScimUserWrite, "now" | "personUids"> {
  /** The person it is matched to, "" while none is known. */
  identityUid: string;
  /** Counts the user's writes: its ETag. */
  version: number;
  createTime: number;
  updateTime: number;
}

/** Which SCIM users listScimUsers reads (one index at most). */
export type ScimUserNarrowing =
  | { by: "all" }
  | { by: "userName" | "externalId" | "email"; value: string };

/** What a SCIM Group is written with. */
export interface ScimGroupWrite {
  orgUid: string;
  id: string;
  displayName: string;
  externalId: string;
  /** SCIM user ids. */
  memberIds: readonly string[];
  now: number;
}

/** A stored SCIM Group: its team, and its members with their display names. */
export interface ScimGroupRecord {
  orgUid: string;
  id: string;
  teamUid: string;
  displayName: string;
  externalId: string;
  members: { id: string; display: string }[];
  version: number;
  createTime: number;
  updateTime: number;
}

/** Which SCIM Groups listScimGroups reads. */
export type ScimGroupNarrowing =
  | { by: "all" }
  | { by: "displayName" | "externalId"; value: string };

/** The keys a person is found by among an organization's SCIM users (scimStanding). */
export interface ScimPersonKeys {
  identityUid: string;
  /** The person's subject at one of the organization's identity providers, or "". */
  externalId: string;
  /** The person's verified email, or "". */
  email: string;
  /**
   * Where the person signs in (their identity's issuer and subject), when known: found only by
   * email, a User (or a deleted User's record) matched to another account of the same issuer is
   * that account's person's, not this one's (an address handed on to a new hire).
   */
  account?: { issuer: string; subject: string };
}

/** What an organization's directory says of a person (ScimStore.scimStanding). */
export type ScimStanding = "active" | "inactive" | "deleted" | "unknown";
