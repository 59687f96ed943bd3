import type { TeamMemberRecord, TeamRecord } from "../team-store.js";
import { declareResource } from "./resource.js";

/** A teams_view row as both backends read it: the team and its member count. */
export interface TeamRow {
  uid: string;
  group_uid: string;
  name: string;
  description: string;
  create_time: number;
  update_time: number;
  member_count: number;
}

/**
 * A team's storage: a child of its group, whose delete it blocks. Its members are rows of
 * team_members (ops/teams.ts), which go with the team or the identity. Read through
 * teams_view, which adds the member count.
 */
export const teams = declareResource<TeamRow, TeamRecord>({
  kind: "team",
  collection: "teams",
  message: "gatehouse.iam.v2beta1.Team",
  table: "teams",
  view: "teams_view",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    member_count: { field: "member_count", fromView: true },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "block" },
  recordOf: teamRecordOf,
});

/** The record of a stored team. */
export function teamRecordOf(row: TeamRow): TeamRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    name: row.name,
    description: row.description,
    memberCount: row.member_count,
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** A member as the member list reads it: the membership and its identity's summary. */
export interface TeamMemberRow {
  team_uid: string;
  identity_uid: string;
  create_time: number;
  name: string;
  description: string;
  issuer: string;
  subject: string;
}

/** The record of a team member. */
export function teamMemberRecordOf(row: TeamMemberRow): TeamMemberRecord {
  return {
    teamUid: row.team_uid,
    identity: {
      uid: row.identity_uid,
      name: row.name,
      description: row.description,
      subject: row.subject,
      issuer: row.issuer,
    },
    createTime: row.create_time,
  };
}

/** Where the list SQL of either backend finds the columns of teams. */
export const teamListColumns = teams.listColumns;
