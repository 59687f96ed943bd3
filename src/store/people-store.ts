/**
 * The storage of an owner's view of people (src/services/iam/people.ts): the people of a
 * group's subtree, how they came to its organization, and their sign-in sessions. Part of
 * `Store`; the same rules hold (atomic operations, times in ms since the epoch).
 *
 * The people of a group are the persons (root identities, made by signing in) who hold a role
 * binding at the group or below it, themselves or through a team they are a member of, or who
 * came in through an identity provider at or below it (PersonOriginKind `identity_provider`),
 * bound or not.
 */
import type { RoleBindingRecord } from "./iam-store.js";
import type { ListPage, ListQuery } from "./vocabulary.js";

/** The ways into an organization that are recorded (the rest are plain sign-ins). */
export type PersonOriginKind = "identity_provider" | "invite" | "scim";

/** A recorded way a person came into an organization, at a group of it. */
export interface PersonOrigin {
  kind: PersonOriginKind;
  /** The group of the provider, invite or SCIM connection. */
  groupUid: string;
  /** The provider's, invite's or SCIM connection's uid. */
  sourceUid: string;
  createTime: number;
}

/** A team a person is a member of, by name. */
export interface PersonTeam {
  uid: string;
  name: string;
}

/** A person as the people view reads them. */
export interface PersonRecord {
  uid: string;
  name: string;
  email: string;
  /** The issuer and subject of the person's sign-in (personUid's input). */
  issuer: string;
  subject: string;
  /** The person's last sign-in (upsertPerson sets it at each). */
  lastSeenTime: number;
  createTime: number;
  updateTime: number;
  /**
   * The person's teams that live at the query's group or below it, or that hold a role there;
   * by name, at most 100.
   */
  teams: PersonTeam[];
  /**
   * The role bindings the person holds at the query's group or below it, their own and their
   * teams'; by create time, at most 100.
   */
  roleBindings: RoleBindingRecord[];
  /** The first recorded way in to the organization of the query's group, if any. */
  origin?: PersonOrigin;
}

/** ListPeople's filters: the group whose people, and the text searched for. */
export interface PeopleFilters {
  /** The group whose subtree's people are listed. */
  group: string;
  /** Case-insensitive text the name or email must contain; "" for everyone. */
  search: string;
}

/** One of a person's sessions, still live (not revoked, a code or refresh token unexpired). */
export interface SessionRecord {
  id: string;
  clientId: string;
  createTime: number;
  /** The latest expiry of its live code or refresh token. */
  expireTime: number;
}

/** What revokePersonSessions did: `none` when no session was live (nothing changed). */
export interface SessionsRevoked {
  kind: "revoked" | "none";
  count: number;
}

/** PeopleStore is the part of Store that answers the people view. */
export interface PeopleStore {
  /**
   * List the people of `filters.group`'s subtree (see above), ordered and paged as every list
   * (name, create_time, update_time, uid; the cursor, skip and limit of `q`). The tree filters
   * and scope of `q` are not used: the caller checked its right at the group.
   */
  listPeople(q: ListQuery<PeopleFilters>): Promise<ListPage<PersonRecord>>;
  /** The person `uid` if they are one of the people of `groupUid`'s subtree, else undefined. */
  getPerson(groupUid: string, uid: string): Promise<PersonRecord | undefined>;
  /**
   * Record that a person came into an organization at `origin.groupUid` (first way in per
   * group and kind; a later one is ignored). Throws `not_found` if the identity or group is
   * gone.
   */
  notePersonOrigin(identityUid: string, origin: PersonOrigin): Promise<void>;
  /** The live sessions of `identityUid` at `now`, newest first, at most 1000. */
  listPersonSessions(identityUid: string, now: number): Promise<SessionRecord[]>;
  /**
   * End the sessions of `identityUid`, one of the people of `groupUid` (only `sessionId`, when
   * not ""): they are revoked and their refresh tokens deleted, so neither they nor the access
   * tokens naming them are accepted again, on any replica. Returns how many were live and are
   * now ended. Throws `not_found` if the identity is not one of the group's people, or if
   * `sessionId` is not one of their live sessions. The event of the change names the group
   * (its first argument); none is recorded when nothing was live.
   */
  revokePersonSessions(
    groupUid: string,
    identityUid: string,
    sessionId: string,
    now: number,
  ): Promise<SessionsRevoked>;
}
