import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { IdentityRefSchema } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  ListTeamMembersResponseSchema,
  ListTeamsResponseSchema,
  type Team,
  TeamMemberSchema,
  TeamSchema,
  type TeamsService,
} from "../../../gen/gatehouse/iam/v2beta1/teams_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { storeOf } from "../../call-store.js";
import { notFound } from "../../errors.js";
import { requireTeamPowers } from "../../grants/team-powers.js";
import type { ListEngine } from "../../list/list.js";
import type { Store } from "../../store/store.js";
import type { TeamRecord } from "../../store/team-store.js";
import { newChildUid } from "../../uid.js";
import {
  checkDescription,
  checkDisplayName,
  checkUid,
  labelsPatch,
  type Violations,
  violations,
} from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";
import { requireTeamMembers } from "./team-members.js";

/** What the teams service needs. */
export interface TeamsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
}

/** The most identities one AddTeamMembers or RemoveTeamMembers names. */
export const maxMembersPerCall = 100;

/** The most members one ListTeamMembers page holds, and its default. */
const maxMemberPage = 200;
const defaultMemberPage = 50;

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(TeamSchema);

/** Check the identity uids of a membership change: 1 to 100 well-formed uids. */
function checkMembers(v: Violations, uids: readonly string[]): string[] {
  if (uids.length === 0) v.add("identityUids", "must name at least one identity");
  if (uids.length > maxMembersPerCall) {
    v.add("identityUids", `may name at most ${maxMembersPerCall} identities`);
  }
  uids.slice(0, maxMembersPerCall).forEach((u, i) => {
    checkUid(v, `identityUids[${i}]`, u);
  });
  return [...new Set(uids)];
}

/**
 * Create the TeamsService: named sets of identities of an organization, living in a group. A
 * role bound to a team is held by its members, so adding a member grants what the team holds:
 * the caller must hold it too (requireTeamPowers), as for a binding.
 */
export function createTeamsService(deps: TeamsDeps): ServiceImpl<typeof TeamsService> {
  const { store, lists, now } = deps;
  return {
    async listTeams(req, ctx) {
      const query = lists.parse(req, {}, listOptionsOf(ctx));
      const page = await store.listTeams(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListTeamsResponseSchema, { teams: items.map(toTeam), ...envelope });
    },

    async getTeam(req) {
      return toTeam(await requireFound("team", req.uid, (uid) => store.getTeam(uid)));
    },

    async createTeam(req, ctx) {
      const store = storeOf(ctx);
      const body = req.team ?? create(TeamSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkDisplayName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      v.throwIfAny();
      const team = await store.createTeam({
        uid: newChildUid(req.parent),
        groupUid: req.parent,
        name: body.name,
        description: body.description,
        now: now(),
      });
      return toTeam(team);
    },

    async updateTeam(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.team, req.updateMask);
      const patch = labelsPatch(v, fields, body, checkDisplayName);
      v.throwIfAny();
      return toTeam(await store.updateTeam(body.uid, patch, now()));
    },

    async deleteTeam(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteTeam(req.uid);
      return {};
    },

    async addTeamMembers(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      const uids = checkMembers(v, req.identityUids);
      v.throwIfAny();
      // The checks and the additions commit together: the caller still holds what the team
      // grants, and each identity is still of the organization.
      const team = await atomically(store, async (tx, authorizer) => {
        const team = await tx.getTeam(req.uid);
        if (!team) throw notFound("team", req.uid);
        await requireTeamMembers(tx, team, uids, (i) => `identityUids[${i}]`);
        await requireTeamPowers(authorizer, tx, callerOf(ctx), team.uid);
        await tx.addTeamMembers(team.uid, uids, now());
        return (await tx.getTeam(team.uid))!;
      });
      return toTeam(team);
    },

    async removeTeamMembers(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      const uids = checkMembers(v, req.identityUids);
      v.throwIfAny();
      // Removing takes access away: what teams.update allows, whatever the team holds.
      const team = await atomically(store, async (tx) => {
        await tx.removeTeamMembers(req.uid, uids);
        return tx.getTeam(req.uid);
      });
      if (!team) throw notFound("team", req.uid);
      return toTeam(team);
    },

    async listTeamMembers(req) {
      const v = violations();
      checkUid(v, "uid", req.uid);
      if (req.pageSize < 0) v.add("pageSize", "must not be negative");
      if (req.pageToken !== "") checkUid(v, "pageToken", req.pageToken);
      v.throwIfAny();
      const size = Math.min(req.pageSize || defaultMemberPage, maxMemberPage);
      // One more than the page: whether there is a next page, without a count.
      const found = await store.listTeamMembers(req.uid, req.pageToken, size + 1);
      const page = found.slice(0, size);
      return create(ListTeamMembersResponseSchema, {
        members: page.map((m) =>
          create(TeamMemberSchema, {
            identity: create(IdentityRefSchema, m.identity),
            createTime: timestampFromMs(m.createTime),
          }),
        ),
        ...(found.length > size ? { nextPageToken: page.at(-1)!.identity.uid } : {}),
      });
    },
  };
}

/** Map a stored team to its API message. */
export function toTeam(t: TeamRecord): Team {
  return create(TeamSchema, {
    uid: t.uid,
    name: t.name,
    description: t.description,
    memberCount: BigInt(t.memberCount),
    createTime: timestampFromMs(t.createTime),
    updateTime: timestampFromMs(t.updateTime),
  });
}
