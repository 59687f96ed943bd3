import { parentOf } from "../../uid.js";
import type {
  NewScimConnection,
  ScimConnectionRecord,
  ScimGroupNarrowing,
  ScimGroupRecord,
  ScimGroupWrite,
  ScimPersonKeys,
  ScimStanding,
  ScimUserNarrowing,
  ScimUserRecord,
  ScimUserWrite,
} from "../scim-store.js";
import { notFoundError, StoreError } from "../store.js";
import { type OpsOf, one, read, rows, run, type Steps, write } from "./operation.js";
import { teamOps } from "./teams.js";

interface ConnectionRow {
  org_uid: string;
  creator_uid: string;
  create_time: number;
  use_time: number;
}

interface UserRow {
  org_uid: string;
  id: string;
  user_name: string;
  external_id: string;
  email_key: string;
  display_name: string;
  identity_uid: string;
  active: number | string;
  version: number | string;
  resource: string;
  create_time: number | string;
  update_time: number | string;
}

const connectionOf = (r: ConnectionRow): ScimConnectionRecord => ({
  uid: r.org_uid,
  orgUid: r.org_uid,
  creatorUid: r.creator_uid,
  createTime: Number(r.create_time),
  useTime: Number(r.use_time),
});

const userOf = (r: UserRow): ScimUserRecord => {
  return {
    orgUid: r.org_uid,
    id: r.id,
    userName: r.user_name,
    externalId: r.external_id,
    displayName: r.display_name,
    email: r.email_key,
    active: Number(r.active) === 1,
    attributes: JSON.parse(r.resource) as Record<string, unknown>,
    identityUid: r.identity_uid,
    version: Number(r.version),
    createTime: Number(r.create_time),
    updateTime: Number(r.update_time),
  };
};

const connectionColumns = "org_uid, creator_uid, create_time, use_time";
const selectUser = "SELECT * FROM scim_users WHERE org_uid = ? AND id = ?";

function* mustHaveConnection(orgUid: string): Steps<void> {
  const row = yield* one("SELECT 1 AS x FROM scim_connections WHERE org_uid = ?", orgUid);
  if (!row) throw notFoundError("scim connection", orgUid);
}

function* userNameTaken(orgUid: string, userName: string, id: string): Steps<void> {
  const row = yield* one<{ id: string }>(
    "SELECT id FROM scim_users WHERE org_uid = ? AND user_name_key = ?",
    orgUid,
    userName.toLowerCase(),
  );
  if (row && row.id !== id) {
    throw new StoreError("already_exists", `userName ${JSON.stringify(userName)}`);
  }
}

// The groups at or below the organization, as a uid range (uids embed their path).
const inOrg = (column: string) => `(${column} = ? OR (${column} > ? AND ${column} < ?))`;
const orgRange = (orgUid: string) => [orgUid, `${orgUid}/`, `${orgUid}0`] as const;

/**
 * The person a SCIM user stands for: who signs in through one of the organization's identity
 * providers with the user's externalId as subject (`personUids`, the uids that sign-in gives
 * them, computed by the caller), else a person whose verified email is the user's and who is
 * no other user of the organization (one holding a role in the organization first), else ""
 * (not signed in yet).
 */
function* matchPerson(
  u: Pick<ScimUserWrite, "orgUid" | "id" | "email" | "personUids">,
): Steps<string> {
  for (const uid of u.personUids) {
    if (yield* one("SELECT 1 AS x FROM identities WHERE uid = ? AND group_uid IS NULL", uid)) {
      return uid;
    }
  }
  if (u.email === "") return "";
  // An address passes from person to person (a new hire gets a departed one's): a person
  // another user of the organization stands for is that user's, whatever their email.
  const person = yield* one<{ uid: string }>(
    `SELECT i.uid FROM identities AS i
     WHERE i.group_uid IS NULL AND lower(i.email) = ?
       AND NOT EXISTS (SELECT 1 FROM scim_users AS o
                       WHERE o.org_uid = ? AND o.identity_uid = i.uid AND o.id <> ?)
     ORDER BY (SELECT count(*) FROM role_bindings AS b
               WHERE b.identity_uid = i.uid AND ${inOrg("b.group_uid")}) DESC, i.uid
     LIMIT 1`,
    u.email.toLowerCase(),
    u.orgUid,
    u.id,
    ...orgRange(u.orgUid),
  );
  return person?.uid ?? "";
}

/**
 * End a person's access through the organization at once: revoke their sessions (their
 * access tokens name them), cut off every token issued to them until now (tokens without a
 * session: the access check reads the cutoff), and delete their role bindings in the
 * organization. The organization must keep an owner.
 */
function* deprovision(
  orgUid: string,
  userId: string,
  identityUid: string,
  now: number,
  ownerRoleUid: string,
): Steps<void> {
  // Out of the organization's SCIM Groups: a reactivated user is in none until the directory
  // adds them again.
  yield* run(
    `DELETE FROM scim_group_members
     WHERE user_id = ? AND team_uid IN (SELECT team_uid FROM scim_groups WHERE org_uid = ?)`,
    userId,
    orgUid,
  );
  if (identityUid === "") return;
  yield* run(
    `DELETE FROM team_members WHERE identity_uid = ? AND ${inOrg("team_uid")}`,
    identityUid,
    ...orgRange(orgUid),
  );
  yield* run(
    "UPDATE oauth_sessions SET revoke_time = ? WHERE identity_uid = ? AND revoke_time IS NULL",
    now,
    identityUid,
  );
  yield* run(
    `DELETE FROM oauth_refresh_tokens
     WHERE session_id IN (SELECT id FROM oauth_sessions WHERE identity_uid = ?)`,
    identityUid,
  );
  yield* run(
    `INSERT INTO identity_token_cutoffs (identity_uid, cutoff_time) VALUES (?, ?)
     ON CONFLICT (identity_uid) DO UPDATE SET cutoff_time = excluded.cutoff_time`,
    identityUid,
    now,
  );
  const owners = "SELECT 1 AS x FROM role_bindings WHERE group_uid = ? AND role_uid = ?";
  const hadOwner = yield* one(owners, orgUid, ownerRoleUid);
  yield* run(
    `DELETE FROM role_bindings WHERE identity_uid = ? AND ${inOrg("group_uid")}`,
    identityUid,
    ...orgRange(orgUid),
  );
  if (hadOwner && !(yield* one(owners, orgUid, ownerRoleUid))) {
    throw new StoreError(
      "failed_precondition",
      `organization ${JSON.stringify(orgUid)} would have no owner left; bind another owner at it first`,
    );
  }
}

function* writeUser(u: ScimUserWrite, identityUid: string, version: number, create: number) {
  yield* run("DELETE FROM scim_users WHERE org_uid = ? AND id = ?", u.orgUid, u.id);
  yield* run(
    `INSERT INTO scim_users (org_uid, id, user_name, user_name_key, external_id, email_key,
       display_name, identity_uid, active, version, resource, create_time, update_time)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    u.orgUid,
    u.id,
    u.userName,
    u.userName.toLowerCase(),
    u.externalId,
    u.email.toLowerCase(),
    u.displayName,
    identityUid,
    u.active ? 1 : 0,
    version,
    JSON.stringify(u.attributes),
    create,
    u.now,
  );
  return userOf((yield* one<UserRow>(selectUser, u.orgUid, u.id))!);
}

// The condition and parameter of a Group narrowing (displayName without case).
function groupNarrowing(narrow: ScimGroupNarrowing): [string, string[]] {
  switch (narrow.by) {
    case "all":
      return ["", []];
    case "displayName":
      return ["AND lower(t.name) = ?", [narrow.value.toLowerCase()]];
    case "externalId":
      return ["AND g.external_id = ?", [narrow.value]];
  }
}

/** A SCIM Group as stored: its team, its row and its members, or undefined. */
function* groupRecord(orgUid: string, id: string): Steps<ScimGroupRecord | undefined> {
  const teamUid = `${orgUid}/${id}`;
  const row = yield* one<{
    name: string;
    external_id: string;
    version: number | string;
    create_time: number | string;
    update_time: number | string;
  }>(
    `SELECT t.name, g.external_id, g.version, t.create_time, t.update_time
     FROM scim_groups AS g JOIN teams AS t ON t.uid = g.team_uid
     WHERE g.team_uid = ? AND g.org_uid = ?`,
    teamUid,
    orgUid,
  );
  if (!row) return undefined;
  const members = yield* rows<{ user_id: string; display_name: string }>(
    `SELECT m.user_id, u.display_name FROM scim_group_members AS m
     JOIN scim_users AS u ON u.org_uid = ? AND u.id = m.user_id
     WHERE m.team_uid = ? ORDER BY m.user_id`,
    orgUid,
    teamUid,
  );
  return {
    orgUid,
    id,
    teamUid,
    displayName: row.name,
    externalId: row.external_id,
    members: members.map((m) => ({ id: m.user_id, display: m.display_name })),
    version: Number(row.version),
    createTime: Number(row.create_time),
    updateTime: Number(row.update_time),
  };
}

/**
 * Make the SCIM Group's members exactly `userIds`: each must be a SCIM user of the
 * organization (else `not_found`). A user added joins the team if active and matched to a
 * person; one removed leaves it, at once (the access caches see the change).
 */
function* setMembers(orgUid: string, teamUid: string, userIds: readonly string[], now: number) {
  const wanted = [...new Set(userIds)];
  const current = new Set(
    (yield* rows<{ user_id: string }>(
      "SELECT user_id FROM scim_group_members WHERE team_uid = ?",
      teamUid,
    )).map((r) => r.user_id),
  );
  let changed = false;
  for (const id of wanted) {
    if (current.delete(id)) continue;
    const user = yield* one<{ identity_uid: string; active: number | string }>(
      "SELECT identity_uid, active FROM scim_users WHERE org_uid = ? AND id = ?",
      orgUid,
      id,
    );
    if (!user) throw notFoundError("scim user", id);
    yield* run("INSERT INTO scim_group_members (team_uid, user_id) VALUES (?, ?)", teamUid, id);
    if (user.identity_uid !== "" && Number(user.active) === 1) {
      yield* run(
        `INSERT INTO team_members (team_uid, identity_uid, create_time) VALUES (?, ?, ?)
         ON CONFLICT (team_uid, identity_uid) DO NOTHING`,
        teamUid,
        user.identity_uid,
        now,
      );
    }
    changed = true;
  }
  // What is left was not asked for: removed.
  for (const id of current) {
    yield* run("DELETE FROM scim_group_members WHERE team_uid = ? AND user_id = ?", teamUid, id);
    const user = yield* one<{ identity_uid: string }>(
      "SELECT identity_uid FROM scim_users WHERE org_uid = ? AND id = ?",
      orgUid,
      id,
    );
    if (user && user.identity_uid !== "") {
      yield* run(
        "DELETE FROM team_members WHERE team_uid = ? AND identity_uid = ?",
        teamUid,
        user.identity_uid,
      );
    }
    changed = true;
  }
  if (changed) yield* run("UPDATE teams SET update_time = ? WHERE uid = ?", now, teamUid);
}

/** Make a newly matched person a member of the teams of the user's SCIM Groups. */
function* joinTeams(userId: string, identityUid: string, now: number) {
  yield* run(
    `INSERT INTO team_members (team_uid, identity_uid, create_time)
     SELECT team_uid, ?, ? FROM scim_group_members WHERE user_id = ?
     ON CONFLICT (team_uid, identity_uid) DO NOTHING`,
    identityUid,
    now,
    userId,
  );
}

/**
 * Delete every SCIM row of organization `orgUid` (its delete, groups.ts): its connection (the
 * token stops working with it), its users and their tombstones, its Groups' rows. The people's
 * token cutoffs stay: they are the people's, not the organization's.
 */
export function* deleteScimRowsOf(orgUid: string): Steps<void> {
  yield* run(
    `DELETE FROM scim_group_members
     WHERE team_uid IN (SELECT team_uid FROM scim_groups WHERE org_uid = ?)`,
    orgUid,
  );
  yield* run("DELETE FROM scim_groups WHERE org_uid = ?", orgUid);
  yield* run("DELETE FROM scim_users WHERE org_uid = ?", orgUid);
  yield* run("DELETE FROM scim_deleted_users WHERE org_uid = ?", orgUid);
  yield* run("DELETE FROM scim_connections WHERE org_uid = ?", orgUid);
}

/**
 * The condition (on `t`, a scim_users or scim_deleted_users row) that leaves out, of what an
 * email finds, a User matched to another account at the person's own issuer: an address is
 * handed on (a new hire gets a departed person's), and the issuer itself says that account is
 * someone else (another subject). A User matched to nobody yet, or to an account elsewhere (the
 * same person's login at another provider, maybe), still counts: refusing is the safe side.
 */
function notAnotherAccount(person: ScimPersonKeys): [string, string[]] {
  const account = person.account;
  if (!account || account.issuer === "") return ["", []];
  return [
    `AND NOT EXISTS (SELECT 1 FROM identities AS o
       WHERE o.uid = t.identity_uid AND o.issuer = ? AND o.subject <> ?)`,
    [account.issuer, account.subject],
  ];
}

// The condition and parameter of a narrowing (userName and email are compared without case).
function narrowing(narrow: ScimUserNarrowing): [string, string[]] {
  switch (narrow.by) {
    case "all":
      return ["", []];
    case "userName":
      return ["AND user_name_key = ?", [narrow.value.toLowerCase()]];
    case "externalId":
      return ["AND external_id = ?", [narrow.value]];
    case "email":
      return ["AND email_key = ?", [narrow.value.toLowerCase()]];
  }
}

/**
 * The SCIM operations of both backends (src/store/scim-store.ts), for a store whose owner
 * role is `ownerRoleUid` (a deprovisioning never leaves an organization without an owner).
 */
export function createScimOps(ownerRoleUid: string) {
  return {
    putScimConnection: write(function* (c: NewScimConnection): Steps<ScimConnectionRecord> {
      if (parentOf(c.orgUid) !== "") {
        throw new StoreError("failed_precondition", `${c.orgUid} is not an organization`);
      }
      if (!(yield* one("SELECT 1 AS x FROM groups WHERE uid = ?", c.orgUid))) {
        throw notFoundError("group", c.orgUid);
      }
      yield* run("DELETE FROM scim_connections WHERE org_uid = ?", c.orgUid);
      yield* run(
        `INSERT INTO scim_connections (org_uid, token_hash, creator_uid, create_time, use_time)
       VALUES (?, ?, ?, ?, ?)`,
        c.orgUid,
        c.tokenHash,
        c.creatorUid,
        c.now,
        c.now,
      );
      return {
        uid: c.orgUid,
        orgUid: c.orgUid,
        creatorUid: c.creatorUid,
        createTime: c.now,
        useTime: c.now,
      };
    }),

    getScimConnection: read(function* (orgUid: string) {
      const row = yield* one<ConnectionRow>(
        `SELECT ${connectionColumns} FROM scim_connections WHERE org_uid = ?`,
        orgUid,
      );
      return row && connectionOf(row);
    }),

    findScimConnection: read(function* (tokenHash: string) {
      const row = yield* one<ConnectionRow>(
        `SELECT ${connectionColumns} FROM scim_connections WHERE token_hash = ?`,
        tokenHash,
      );
      return row && connectionOf(row);
    }),

    deleteScimConnection: write(function* (orgUid: string) {
      if ((yield* run("DELETE FROM scim_connections WHERE org_uid = ?", orgUid)) === 0) {
        throw notFoundError("scim connection", orgUid);
      }
    }),

    touchScimConnection: write(
      function* (orgUid: string, time: number) {
        yield* run("UPDATE scim_connections SET use_time = ? WHERE org_uid = ?", time, orgUid);
      },
      { accessNeutral: true, bookkeeping: true },
    ),

    createScimUser: write(function* (u: ScimUserWrite): Steps<ScimUserRecord> {
      yield* mustHaveConnection(u.orgUid);
      if (yield* one(selectUser, u.orgUid, u.id)) {
        throw new StoreError("already_exists", `scim user ${JSON.stringify(u.id)}`);
      }
      yield* userNameTaken(u.orgUid, u.userName, u.id);
      const identityUid = yield* matchPerson(u);
      // Created inactive: the person, if known, has no access through the organization.
      if (!u.active) yield* deprovision(u.orgUid, u.id, identityUid, u.now, ownerRoleUid);
      return yield* writeUser(u, identityUid, 1, u.now);
    }),

    getScimUser: read(function* (orgUid: string, id: string) {
      const row = yield* one<UserRow>(selectUser, orgUid, id);
      return row && userOf(row);
    }),

    listScimUsers: read(function* (
      orgUid: string,
      narrow: ScimUserNarrowing,
      limit: number,
      offset: number,
    ) {
      const [where, params] = narrowing(narrow);
      const found = yield* rows<UserRow>(
        `SELECT * FROM scim_users WHERE org_uid = ? ${where}
         ORDER BY create_time, id LIMIT ? OFFSET ?`,
        orgUid,
        ...params,
        limit,
        offset,
      );
      return found.map(userOf);
    }),

    countScimUsers: read(function* (orgUid: string, narrow: ScimUserNarrowing) {
      const [where, params] = narrowing(narrow);
      const row = yield* one<{ n: number | string }>(
        `SELECT count(*) AS n FROM scim_users WHERE org_uid = ? ${where}`,
        orgUid,
        ...params,
      );
      return Number(row?.n ?? 0);
    }),

    replaceScimUser: write(function* (u: ScimUserWrite, expectVersion?: number) {
      const row = yield* one<UserRow>(selectUser, u.orgUid, u.id);
      if (!row) throw notFoundError("scim user", u.id);
      const current = userOf(row);
      if (expectVersion !== undefined && expectVersion !== current.version) {
        throw new StoreError("conflict", `scim user ${JSON.stringify(u.id)} has changed`);
      }
      yield* userNameTaken(u.orgUid, u.userName, u.id);
      // A match, once made, stays: a later sign-in by another person with the email is not it.
      const identityUid = current.identityUid || (yield* matchPerson(u));
      // Deprovisioned on the way to inactive, or when an inactive user is first matched; an
      // update of a user who stays inactive does not cut the person's tokens again.
      const matchedNow = current.identityUid === "" && identityUid !== "";
      if (!u.active && (current.active || matchedNow)) {
        yield* deprovision(u.orgUid, u.id, identityUid, u.now, ownerRoleUid);
      }
      // A person matched now joins the teams of the SCIM Groups the user is already in.
      if (u.active && matchedNow) yield* joinTeams(u.id, identityUid, u.now);
      return yield* writeUser(u, identityUid, current.version + 1, current.createTime);
    }),

    deleteScimUser: write(function* (
      orgUid: string,
      id: string,
      now: number,
      personUids: readonly string[],
    ) {
      const row = yield* one<UserRow>(selectUser, orgUid, id);
      if (!row) throw notFoundError("scim user", id);
      const current = userOf(row);
      const identityUid = current.identityUid || (yield* matchPerson({ ...current, personUids }));
      if (current.active || current.identityUid === "") {
        yield* deprovision(orgUid, id, identityUid, now, ownerRoleUid);
      }
      yield* run("DELETE FROM scim_users WHERE org_uid = ? AND id = ?", orgUid, id);
      yield* run("DELETE FROM scim_group_members WHERE user_id = ?", id);
      // Who the user stood for, kept: the person's next sign-in through the organization's
      // provider is refused as an inactive user's is (scimStanding).
      yield* run(
        `INSERT INTO scim_deleted_users (org_uid, id, identity_uid, external_id, email_key,
           delete_time) VALUES (?, ?, ?, ?, ?, ?)`,
        orgUid,
        id,
        identityUid,
        current.externalId,
        current.email.toLowerCase(),
        now,
      );
    }),

    createScimGroup: write(function* (g: ScimGroupWrite): Steps<ScimGroupRecord> {
      yield* mustHaveConnection(g.orgUid);
      const teamUid = `${g.orgUid}/${g.id}`;
      yield* teamOps.createTeam.steps({
        uid: teamUid,
        groupUid: g.orgUid,
        name: g.displayName,
        description: "",
        now: g.now,
      });
      yield* run(
        "INSERT INTO scim_groups (team_uid, org_uid, external_id, version) VALUES (?, ?, ?, 1)",
        teamUid,
        g.orgUid,
        g.externalId,
      );
      yield* setMembers(g.orgUid, teamUid, g.memberIds, g.now);
      return (yield* groupRecord(g.orgUid, g.id))!;
    }),

    getScimGroup: read(function* (orgUid: string, id: string) {
      return yield* groupRecord(orgUid, id);
    }),

    listScimGroups: read(function* (
      orgUid: string,
      narrow: ScimGroupNarrowing,
      limit: number,
      offset: number,
    ) {
      const [where, params] = groupNarrowing(narrow);
      const ids = yield* rows<{ team_uid: string }>(
        `SELECT g.team_uid FROM scim_groups AS g JOIN teams AS t ON t.uid = g.team_uid
       WHERE g.org_uid = ? ${where} ORDER BY t.create_time, g.team_uid LIMIT ? OFFSET ?`,
        orgUid,
        ...params,
        limit,
        offset,
      );
      const out: ScimGroupRecord[] = [];
      for (const { team_uid } of ids) {
        const found = yield* groupRecord(orgUid, team_uid.slice(orgUid.length + 1));
        if (found) out.push(found);
      }
      return out;
    }),

    countScimGroups: read(function* (orgUid: string, narrow: ScimGroupNarrowing) {
      const [where, params] = groupNarrowing(narrow);
      const row = yield* one<{ n: number | string }>(
        `SELECT count(*) AS n FROM scim_groups AS g JOIN teams AS t ON t.uid = g.team_uid
       WHERE g.org_uid = ? ${where}`,
        orgUid,
        ...params,
      );
      return Number(row?.n ?? 0);
    }),

    replaceScimGroup: write(function* (g: ScimGroupWrite, expectVersion?: number) {
      const current = yield* groupRecord(g.orgUid, g.id);
      if (!current) throw notFoundError("scim group", g.id);
      if (expectVersion !== undefined && expectVersion !== current.version) {
        throw new StoreError("conflict", `scim group ${JSON.stringify(g.id)} has changed`);
      }
      yield* teamOps.updateTeam.steps(current.teamUid, { name: g.displayName }, g.now);
      yield* run(
        "UPDATE scim_groups SET external_id = ?, version = version + 1 WHERE team_uid = ?",
        g.externalId,
        current.teamUid,
      );
      yield* setMembers(g.orgUid, current.teamUid, g.memberIds, g.now);
      return (yield* groupRecord(g.orgUid, g.id))!;
    }),

    deleteScimGroup: write(function* (orgUid: string, id: string) {
      const current = yield* groupRecord(orgUid, id);
      if (!current) throw notFoundError("scim group", id);
      yield* run("DELETE FROM scim_group_members WHERE team_uid = ?", current.teamUid);
      yield* run("DELETE FROM scim_groups WHERE team_uid = ?", current.teamUid);
      // The team's own delete: its memberships and bindings go with it.
      yield* teamOps.deleteTeam.steps(current.teamUid);
    }),

    scimGroupsOfUser: read(function* (orgUid: string, userId: string) {
      const found = yield* rows<{ team_uid: string; name: string }>(
        `SELECT m.team_uid, t.name FROM scim_group_members AS m
       JOIN scim_groups AS g ON g.team_uid = m.team_uid
       JOIN teams AS t ON t.uid = m.team_uid
       WHERE m.user_id = ? AND g.org_uid = ? ORDER BY t.name, m.team_uid`,
        userId,
        orgUid,
      );
      return found.map((r) => ({ id: r.team_uid.slice(orgUid.length + 1), name: r.name }));
    }),

    scimStanding: read(function* (orgUid: string, person: ScimPersonKeys): Steps<ScimStanding> {
      const keys = [
        ["identity_uid", person.identityUid],
        ["external_id", person.externalId],
        ["email_key", person.email.toLowerCase()],
      ] as const;
      for (const [column, value] of keys) {
        if (value === "") continue;
        const [mine, params]: [string, string[]] =
          column === "email_key" ? notAnotherAccount(person) : ["", []];
        const users = yield* rows<{ active: number | string }>(
          `SELECT t.active FROM scim_users AS t WHERE t.org_uid = ? AND t.${column} = ? ${mine}`,
          orgUid,
          value,
          ...params,
        );
        // Any active user of the person's lets them in: a user the directory made again
        // after deleting (or deactivating) an earlier one is the directory's word now.
        if (users.some((u) => Number(u.active) === 1)) return "active";
        if (users.length > 0) return "inactive";
        const deleted = yield* one(
          `SELECT 1 AS x FROM scim_deleted_users AS t
           WHERE t.org_uid = ? AND t.${column} = ? ${mine}`,
          orgUid,
          value,
          ...params,
        );
        if (deleted) return "deleted";
      }
      return "unknown";
    }),

    tokenCutoff: read(function* (uid: string) {
      const row = yield* one<{ cutoff_time: number | string }>(
        "SELECT cutoff_time FROM identity_token_cutoffs WHERE identity_uid = ?",
        uid,
      );
      return row ? Number(row.cutoff_time) : 0;
    }),
  } satisfies OpsOf<
    | "putScimConnection"
    | "getScimConnection"
    | "findScimConnection"
    | "deleteScimConnection"
    | "touchScimConnection"
    | "createScimUser"
    | "getScimUser"
    | "listScimUsers"
    | "countScimUsers"
    | "replaceScimUser"
    | "deleteScimUser"
    | "createScimGroup"
    | "getScimGroup"
    | "listScimGroups"
    | "countScimGroups"
    | "replaceScimGroup"
    | "deleteScimGroup"
    | "scimGroupsOfUser"
    | "scimStanding"
    | "tokenCutoff"
  >;
}
