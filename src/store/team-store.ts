/**
 * The storage contract of teams: named sets of identities of an organization, living in a
 * group, to which roles are bound. Part of `Store`; the same rules hold (atomic operations,
 * StoreError for what a caller can cause, times in ms since the epoch). Which identities may
 * join which team is the service's rule, not the store's.
 */
import type { ListPage, ListQuery } from "./vocabulary.js";

/** A stored team. */
export interface TeamRecord {
  uid: string;
  /** The group the team lives in: its uid's parent. */
  groupUid: string;
  name: string;
  description: string;
  memberCount: number;
  createTime: number;
  updateTime: number;
}

/** Input of createTeam. `uid` must be a direct child uid of `groupUid`. */
export interface NewTeam {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  now: number;
}

/** A change to a team; absent fields keep their value. */
export interface TeamPatch {
  name?: string;
  description?: string;
}

/** One member of a team, with the summary of its identity. */
export interface TeamMemberRecord {
  teamUid: string;
  identity: { uid: string; name: string; description: string; subject: string; issuer: string };
  /** When the identity joined the team. */
  createTime: number;
}

/** TeamStore is the part of Store that holds teams and their members. */
export interface TeamStore {
  /**
   * Create a team with no members. Throws `not_found` if its group does not exist,
   * `already_exists` if the uid is taken or a team of the group has the name.
   */
  createTeam(team: NewTeam): Promise<TeamRecord>;
  /** Get a team, or undefined. */
  getTeam(uid: string): Promise<TeamRecord | undefined>;
  /** Change a team and set updateTime. Throws `not_found`, `already_exists` as createTeam. */
  updateTeam(uid: string, patch: TeamPatch, now: number): Promise<TeamRecord>;
  /**
   * Delete a team, its memberships and every role binding of it, and return it as it was.
   * Throws `not_found`.
   */
  deleteTeam(uid: string): Promise<TeamRecord>;
  /** List teams; the tree filters and scope apply to the team's group. */
  listTeams(query: ListQuery): Promise<ListPage<TeamRecord>>;
  /**
   * Make the identities `identityUids` members of the team; those already members stay as
   * they were. Returns the uids that joined, in the order given. Throws `not_found` if the team
   * or one of the identities does not exist (and adds none).
   */
  addTeamMembers(teamUid: string, identityUids: readonly string[], now: number): Promise<string[]>;
  /**
   * Remove the identities `identityUids` from the team; those not members are ignored. Returns
   * the uids that left, in the order given. Throws `not_found` if the team does not exist.
   */
  removeTeamMembers(teamUid: string, identityUids: readonly string[]): Promise<string[]>;
  /**
   * The members of a team in order of identity uid, strictly after `after` (a uid; "" from
   * the start), at most `limit`. Throws `not_found` if the team does not exist.
   */
  listTeamMembers(teamUid: string, after: string, limit: number): Promise<TeamMemberRecord[]>;
  /**
   * The teams the identity is a member of whose uid lies under `under` (a group or
   * organization uid; "" for every team), in order of uid.
   */
  teamsOfIdentity(identityUid: string, under: string): Promise<TeamRecord[]>;
}
