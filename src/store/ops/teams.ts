import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { insertOnly, updateStored } from "../rows/resource.js";
import {
  type TeamMemberRow,
  type TeamRow,
  teamMemberRecordOf,
  teamRecordOf,
  teams,
} from "../rows/team-rows.js";
import { StoreError } from "../store.js";
import type { NewTeam, TeamPatch } from "../team-store.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  read,
  rows,
  run,
  type Steps,
  write,
} from "./operation.js";

const selectTeam = teams.select;

const mustFind = (uid: string) => found<TeamRow>("team", selectTeam, uid);

function* checkName(groupUid: string, name: string, self: string): Steps<void> {
  if (
    yield* exists(
      "SELECT 1 FROM teams WHERE group_uid = ? AND name = ? AND uid <> ?",
      groupUid,
      name,
      self,
    )
  ) {
    throw new StoreError("already_exists", `a team of this group is named ${JSON.stringify(name)}`);
  }
}

// A membership change is a change of the team (SCIM's meta.lastModified, say): it bumps the
// team's update_time.
const touchTeam = "UPDATE teams SET update_time = ? WHERE uid = ?";

/**
 * The team operations of both backends. A team with no members and no bindings is no access
 * answer's input: its creation and its renaming keep the access caches warm; a membership
 * change or a delete changes what its members hold, so it does not (on PostgreSQL, the change
 * feed then tells every replica, as for a role binding).
 */
export const teamOps = {
  createTeam: write(
    function* (t: NewTeam) {
      if (parentOf(t.uid) !== t.groupUid || t.groupUid === "") {
        throw new Error(`team uid ${t.uid} is not a direct child of ${t.groupUid}`);
      }
      yield* mustExist("group", t.groupUid);
      if (yield* exists("SELECT 1 FROM teams WHERE uid = ?", t.uid)) {
        throw new StoreError("already_exists", `team ${JSON.stringify(t.uid)}`);
      }
      yield* checkName(t.groupUid, t.name, t.uid);
      yield* insertOnly(teams, {
        uid: t.uid,
        group_uid: t.groupUid,
        name: t.name,
        description: t.description,
        create_time: t.now,
        update_time: t.now,
      });
      return teamRecordOf(yield* mustFind(t.uid));
    },
    { accessNeutral: true },
  ),

  getTeam: lookup(selectTeam, teamRecordOf),

  updateTeam: write(
    function* (uid: string, patch: TeamPatch, now: number) {
      const row = yield* mustFind(uid);
      if (isEmptyPatch(patch)) return teamRecordOf(row);
      const name = patch.name ?? row.name;
      if (name !== row.name) yield* checkName(row.group_uid, name, uid);
      const after = yield* updateStored(teams, uid, {
        name,
        description: patch.description ?? row.description,
        update_time: now,
      });
      return teamRecordOf(after);
    },
    { accessNeutral: true },
  ),

  deleteTeam: write(function* (uid: string) {
    // Read in the delete's transaction: its event says what was deleted, as then named.
    const row = yield* mustFind(uid);
    // What the team held ends with it: its bindings go, wherever they are.
    yield* run("DELETE FROM role_bindings WHERE team_uid = ?", uid);
    yield* run("DELETE FROM team_members WHERE team_uid = ?", uid);
    // A SCIM Group is its team: the Group goes with it (none of its rows left orphaned).
    yield* run("DELETE FROM scim_group_members WHERE team_uid = ?", uid);
    yield* run("DELETE FROM scim_groups WHERE team_uid = ?", uid);
    yield* run("DELETE FROM teams WHERE uid = ?", uid);
    return teamRecordOf(row);
  }),

  listTeams: list(teams.listColumns, teamRecordOf),

  addTeamMembers: write(function* (teamUid: string, identityUids: readonly string[], now: number) {
    yield* mustFind(teamUid);
    const added: string[] = [];
    for (const identityUid of identityUids) {
      yield* mustExist("identity", identityUid);
      const n = yield* run(
        `INSERT INTO team_members (team_uid, identity_uid, create_time) VALUES (?, ?, ?)
         ON CONFLICT (team_uid, identity_uid) DO NOTHING`,
        teamUid,
        identityUid,
        now,
      );
      if (n > 0) added.push(identityUid);
    }
    if (added.length > 0) yield* run(touchTeam, now, teamUid);
    return added;
  }),

  removeTeamMembers: write(function* (teamUid: string, identityUids: readonly string[]) {
    yield* mustFind(teamUid);
    const removed: string[] = [];
    for (const identityUid of identityUids) {
      const n = yield* run(
        "DELETE FROM team_members WHERE team_uid = ? AND identity_uid = ?",
        teamUid,
        identityUid,
      );
      if (n > 0) removed.push(identityUid);
    }
    // No clock here: the removal's time is the team's change only through its event.
    return removed;
  }),

  listTeamMembers: read(
    function* (teamUid: string, after: string, limit: number) {
      yield* mustFind(teamUid);
      const found = yield* rows<TeamMemberRow>(
        `SELECT m.team_uid, m.identity_uid, m.create_time,
           i.name, i.description, i.issuer, i.subject
         FROM team_members AS m JOIN identities AS i ON i.uid = m.identity_uid
         WHERE m.team_uid = ? AND m.identity_uid > ?
         ORDER BY m.identity_uid LIMIT ?`,
        teamUid,
        after,
        limit,
      );
      return found.map(teamMemberRecordOf);
    },
    { snapshot: true },
  ),

  teamsOfIdentity: read(function* (identityUid: string, under: string) {
    // Strictly below `under` in the uid tree: the range of uids that start with `under/`.
    const found = yield* rows<TeamRow>(
      `SELECT t.* FROM team_members AS m JOIN teams_view AS t ON t.uid = m.team_uid
       WHERE m.identity_uid = ? AND (? = '' OR (t.uid > ? AND t.uid < ?))
       ORDER BY t.uid`,
      identityUid,
      under,
      `${under}/`,
      `${under}0`,
    );
    return found.map(teamRecordOf);
  }),
} satisfies OpsOf<
  | "createTeam"
  | "getTeam"
  | "updateTeam"
  | "deleteTeam"
  | "listTeams"
  | "addTeamMembers"
  | "removeTeamMembers"
  | "listTeamMembers"
  | "teamsOfIdentity"
>;
