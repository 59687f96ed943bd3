import { type Client, createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { AccessService } from "../../gen/gatehouse/iam/v2beta1/access_pb.js";
import { ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import {
  failure,
  type IamClients,
  iamClients,
  outcome,
  transportFor,
} from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { backends, type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

const editor = builtinRoles.find((r) => r.name === "editor")!;
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const owner = builtinRoles.find((r) => r.name === "owner")!;

// Teams through the clients people use: Connect and gRPC (connect-node), REST (fetch). A role
// bound to a team reaches its members at once, down the tree, and leaves them at once when
// they leave the team or the team goes; writers never grant through a team what they lack.
describe.each(backends)("teams on %s", (backend) => {
  const ts = useTestServer({}, { backend });
  let org: TestOrg;
  let other: TestOrg;
  let group: string;
  let leaf: string;
  let member: TestCaller;
  let asOwner: IamClients;
  let memberRepos: Client<typeof ReposService>;
  let asOwnerGrpc: IamClients;

  beforeAll(async () => {
    org = await ts.makeOrg("teams");
    other = await ts.makeOrg("elsewhere");
    group = newChildUid(org.uid);
    leaf = newChildUid(group);
    const now = Date.now();
    await ts.store.createGroup({
      uid: group,
      parentUid: org.uid,
      name: "eng",
      description: "",
      now,
    });
    await ts.store.createGroup({ uid: leaf, parentUid: group, name: "api", description: "", now });
    member = await ts.makeIdentity(org.uid);
    asOwner = iamClients(transportFor("connect", ts.url, org.owner.headers));
    asOwnerGrpc = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    memberRepos = createClient(ReposService, transportFor("grpc", ts.url, member.headers));
  });

  // A repo write at the leaf: what editor, bound at `group`, allows below it.
  const canWriteUnderLeaf = () =>
    outcome(
      memberRepos.createRepo({
        parent: leaf,
        repo: { name: `r${Math.random().toString(36).slice(2)}` },
      }),
    );

  it("grants a team's role to its members down the tree, and ends it at once", async () => {
    const team = await asOwner.teams.createTeam({ parent: group, team: { name: "platform" } });
    expect(team.memberCount).toBe(0n);
    // Bound over REST, with teamUid in place of identityUid.
    const bound = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/roleBindings/${group}`,
      { teamUid: team.uid, roleUid: editor.uid },
      org.owner.headers,
    );
    expect(bound.status, JSON.stringify(bound.json)).toBe(200);
    expect(bound.json.team).toEqual({ uid: team.uid, name: "platform", description: "" });
    expect(await canWriteUnderLeaf()).toBe(7);

    const added = await asOwnerGrpc.teams.addTeamMembers({
      uid: team.uid,
      identityUids: [member.uid],
    });
    expect(added.memberCount).toBe(1n);
    expect(await canWriteUnderLeaf()).toBe(0);
    // Not above the binding's group.
    expect(
      await outcome(
        memberRepos.createRepo({
          parent: org.uid,
          repo: { name: "top" },
        }),
      ),
    ).toBe(7);

    const removed = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/teams/${team.uid}:removeMembers`,
      { identityUids: [member.uid] },
      org.owner.headers,
    );
    expect(removed.status, JSON.stringify(removed.json)).toBe(200);
    expect(removed.json.memberCount).toBe("0");
    expect(await canWriteUnderLeaf()).toBe(7);

    await asOwner.teams.addTeamMembers({ uid: team.uid, identityUids: [member.uid] });
    expect(await canWriteUnderLeaf()).toBe(0);
    await asOwner.teams.deleteTeam({ uid: team.uid });
    expect(await canWriteUnderLeaf()).toBe(7);
    expect(await outcome(asOwner.roleBindings.getRoleBinding({ uid: bound.json.uid }))).toBe(5);
  });

  it("says in CheckAccess that access comes through a team, and which", async () => {
    const team = await asOwner.teams.createTeam({ parent: org.uid, team: { name: "readers" } });
    await asOwner.roleBindings.createRoleBinding({
      parent: org.uid,
      roleBinding: { teamUid: team.uid, roleUid: viewer.uid },
    });
    await asOwner.teams.addTeamMembers({ uid: team.uid, identityUids: [member.uid] });
    const access = createClient(AccessService, transportFor("connect", ts.url, org.owner.headers));
    const answer = await access.checkAccess({
      identityUid: member.uid,
      capability: "groups.list",
      groupUid: leaf,
    });
    expect(answer.allowed).toBe(true);
    const viaTeam = answer.grants.find((g) => g.roleBinding?.team?.uid === team.uid);
    expect(viaTeam?.roleBinding?.team?.name).toBe("readers");
    expect(viaTeam?.inherited).toBe(true);
    // The member's own view (GetCaller) lists the team's binding among its bindings.
    const me = await restCall(ts.url, "GET", "/iam/v2beta1/caller", undefined, member.headers);
    expect(me.json.roleBindings.map((b: { team?: { uid: string } }) => b.team?.uid)).toContain(
      team.uid,
    );
    await asOwner.teams.deleteTeam({ uid: team.uid });
  });

  it("lists, renames and pages members; records an event for each change", async () => {
    const team = await asOwner.teams.createTeam({ parent: group, team: { name: "paged" } });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ts.makeIdentity(group)).uid);
    await asOwner.teams.addTeamMembers({ uid: team.uid, identityUids: ids });
    const first = await asOwner.teams.listTeamMembers({ uid: team.uid, pageSize: 2 });
    expect(first.members).toHaveLength(2);
    const rest = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/teams/${team.uid}:listMembers?pageSize=2&pageToken=${first.nextPageToken}`,
      undefined,
      org.owner.headers,
    );
    expect(rest.status).toBe(200);
    expect(rest.json.nextPageToken).toBeUndefined();
    const seen = [...first.members.map((m) => m.identity!.uid), rest.json.members[0].identity.uid];
    expect(seen).toEqual([...ids].sort());
    const renamed = await asOwner.teams.updateTeam({ team: { uid: team.uid, name: "renamed" } });
    expect(renamed.name).toBe("renamed");
    expect(
      (await asOwner.teams.listTeams({ uidp: { childrenOf: group }, name: "renamed" })).teams.map(
        (t) => t.uid,
      ),
    ).toEqual([team.uid]);
    const events = createClient(EventsService, transportFor("connect", ts.url, org.owner.headers));
    const types = async (type: string) =>
      Number((await events.listEvents({ type, pageSize: 1 })).totalCount);
    for (const type of [
      "dev.gatehouse.iam.team.created.v1",
      "dev.gatehouse.iam.team.updated.v1",
      "dev.gatehouse.iam.team_members.added.v1",
    ]) {
      expect(await types(type), type).toBeGreaterThan(0);
    }
  });

  it("refuses members from elsewhere, a binding to two holders or a foreign team", async () => {
    const team = await asOwner.teams.createTeam({ parent: group, team: { name: "strict" } });
    const outsider = await ts.makeIdentity(other.uid);
    for (const uid of [outsider.uid, other.owner.uid, `${org.uid}/0123456789abcdef`]) {
      const err = await failure(
        asOwner.teams.addTeamMembers({ uid: team.uid, identityUids: [uid] }),
      );
      expect(err.code).toBe(3);
      expect(err.fields).toEqual(["identityUids[0]"]);
    }
    const both = await failure(
      asOwner.roleBindings.createRoleBinding({
        parent: group,
        roleBinding: { identityUid: member.uid, teamUid: team.uid, roleUid: viewer.uid },
      }),
    );
    expect(both.code).toBe(3);
    const foreignTeam = await ts.store.createTeam({
      uid: newChildUid(other.uid),
      groupUid: other.uid,
      name: "theirs",
      description: "",
      now: Date.now(),
    });
    const foreign = await failure(
      asOwner.roleBindings.createRoleBinding({
        parent: group,
        roleBinding: { teamUid: foreignTeam.uid, roleUid: viewer.uid },
      }),
    );
    expect(foreign.code).toBe(3);
    expect(foreign.fields).toEqual(["teamUid"]);
    const dup = await asOwner.teams.createTeam({ parent: group, team: { name: "dup" } });
    expect(await outcome(asOwner.teams.createTeam({ parent: group, team: { name: "dup" } }))).toBe(
      6,
    );
    await asOwner.teams.deleteTeam({ uid: dup.uid });
  });

  describe("escalation", () => {
    // What the admin holds: teams and bindings, far from owner.
    let admin: TestCaller;
    let asAdmin: IamClients;
    beforeAll(async () => {
      const role = newChildUid(org.uid);
      await ts.store.createRole({
        uid: role,
        groupUid: org.uid,
        name: "team-admin",
        description: "",
        capabilities: [
          "groups.list",
          "teams.list",
          "teams.create",
          "teams.update",
          "role_bindings.list",
          "role_bindings.create",
        ],
        now: Date.now(),
      });
      admin = await ts.makeIdentity(org.uid, [role]);
      asAdmin = iamClients(transportFor("connect", ts.url, admin.headers));
    });

    it("binds to a team only what the writer may grant", async () => {
      const team = await asAdmin.teams.createTeam({ parent: group, team: { name: "esc-bind" } });
      const err = await failure(
        asAdmin.roleBindings.createRoleBinding({
          parent: group,
          roleBinding: { teamUid: team.uid, roleUid: owner.uid },
        }),
      );
      expect(err.code).toBe(7);
    });

    it("adds a member only to a team whose roles the writer holds, where they are bound", async () => {
      const team = await asAdmin.teams.createTeam({ parent: group, team: { name: "esc-add" } });
      // The owner binds editor to the team, which the admin does not hold.
      await asOwner.roleBindings.createRoleBinding({
        parent: group,
        roleBinding: { teamUid: team.uid, roleUid: editor.uid },
      });
      // Adding itself (or anyone) would hand over editor at the group: refused, and nothing
      // changed.
      const err = await failure(
        asAdmin.teams.addTeamMembers({ uid: team.uid, identityUids: [admin.uid] }),
      );
      expect(err.code).toBe(7);
      expect((await asOwner.teams.getTeam({ uid: team.uid })).memberCount).toBe(0n);
      // A team bound to nothing the admin lacks takes members from it.
      const plain = await asAdmin.teams.createTeam({ parent: group, team: { name: "esc-ok" } });
      const narrow = newChildUid(org.uid);
      await ts.store.createRole({
        uid: narrow,
        groupUid: org.uid,
        name: "narrow",
        description: "",
        capabilities: ["groups.list"],
        now: Date.now(),
      });
      await asOwner.roleBindings.createRoleBinding({
        parent: group,
        roleBinding: { teamUid: plain.uid, roleUid: narrow },
      });
      const ok = await asAdmin.teams.addTeamMembers({ uid: plain.uid, identityUids: [admin.uid] });
      expect(ok.memberCount).toBe(1n);
      // Removing only takes away: allowed whatever the team holds.
      await asAdmin.teams.removeTeamMembers({ uid: team.uid, identityUids: [admin.uid] });
    });
  });
});
