import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { useProviderSignIn } from "../helpers/provider-sign-in.js";
import { backends, type TestCaller } from "../helpers/test-server.js";

// An organization provider's groups claim sets, at each sign-in, the person's membership of
// the teams its group mappings name: joined when the claim has the group, left when it no
// longer does. Joining is granted with the provider writer's authority, as its default role.

const editor = builtinRoles.find((r) => r.name === "editor")!.uid;

describe.each(backends)("identity provider group mappings on %s", (backend) => {
  const s = useProviderSignIn({
    backend,
    people: Object.fromEntries(["alice", "bob", "carol"].map((p) => [p, { name: p }])),
  });
  let group: string;
  let subOwner: TestCaller;
  const api = (method: string, path: string, body?: unknown, as?: TestCaller) =>
    s.api(method, path, body, as);

  /** The whole browser flow through provider `uid` as `account`, its ID token naming `groups`. */
  async function signIn(uid: string, account: string, groups: string[]): Promise<string> {
    const back = await s.signIn(uid, account, { groups });
    expect(back.searchParams.get("error_description")).toBeNull();
    expect(back.searchParams.get("code")).not.toBeNull();
    return s.personOf(uid, account);
  }

  async function membersOf(team: string): Promise<string[]> {
    const res = await api("GET", `/iam/v2beta1/teams/${team}:listMembers?pageSize=200`);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json.members.map((m: { identity: { uid: string } }) => m.identity.uid);
  }

  beforeAll(async () => {
    group = newChildUid(s.org.uid);
    await s.gh.store.createGroup({
      uid: group,
      parentUid: s.org.uid,
      name: "eng",
      description: "",
      now: Date.now(),
    });
    subOwner = await s.gh.makeIdentity(group, ["owner"]);
  });

  async function teamWithEditor(name: string, as: TestCaller = s.org.owner): Promise<string> {
    const team = await api("POST", `/iam/v2beta1/teams/${group}`, { name }, as);
    expect(team.status, JSON.stringify(team.json)).toBe(200);
    const bound = await api(
      "POST",
      `/iam/v2beta1/roleBindings/${group}`,
      { teamUid: team.json.uid, roleUid: editor },
      as,
    );
    expect(bound.status, JSON.stringify(bound.json)).toBe(200);
    return team.json.uid as string;
  }

  const provider = (mappings: { group: string; teamUid: string }[], as: TestCaller) =>
    s.createProvider(group, { oidc: { groupsClaim: "groups" }, groupMappings: mappings }, as);

  it("adds and removes members to match the claim at each sign-in, with events", async () => {
    const eng = await teamWithEditor("engineers");
    const ops = await teamWithEditor("operators");
    const made = await provider(
      [
        { group: "eng", teamUid: eng },
        { group: "ops", teamUid: ops },
      ],
      s.org.owner,
    );
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    expect(made.json.groupMappings).toEqual([
      { group: "eng", teamUid: eng },
      { group: "ops", teamUid: ops },
    ]);
    const uid = made.json.uid as string;

    const alice = await signIn(uid, "alice", ["eng", "unmapped"]);
    expect(await membersOf(eng)).toEqual([alice]);
    expect(await membersOf(ops)).toEqual([]);
    // What the team holds, alice holds: editor at the group, through the team.
    const check = await api(
      "GET",
      `/iam/v2beta1/access:check?identityUid=${alice}&capability=repo.create&groupUid=${group}`,
    );
    expect(check.json.allowed).toBe(true);
    expect(check.json.grants[0].roleBinding.team.uid).toBe(eng);

    await signIn(uid, "alice", ["ops"]);
    expect(await membersOf(eng)).toEqual([]);
    expect(await membersOf(ops)).toEqual([alice]);
    await signIn(uid, "alice", []);
    expect(await membersOf(ops)).toEqual([]);

    const events = async (type: string) =>
      (
        await api(
          "GET",
          `/events/v2beta1/events?uidp.descendantsOf=${s.org.uid}&type=${type}&actor=${alice}`,
        )
      ).json.events as { source: string; subject: string }[];
    const added = await events("dev.gatehouse.iam.team_members.added.v1");
    expect(added.map((e) => e.source)).toEqual(["/oauth/callback", "/oauth/callback"]);
    expect((await events("dev.gatehouse.iam.team_members.removed.v1")).length).toBe(2);
  });

  it("joins nobody once the writer may no longer add members; leaving still applies", async () => {
    const team = await teamWithEditor("sub-owned", subOwner);
    const made = await provider([{ group: "eng", teamUid: team }], subOwner);
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    const uid = made.json.uid as string;
    const bob = await signIn(uid, "bob", ["eng"]);
    expect(await membersOf(team)).toEqual([bob]);

    // The organization's owner removes the sub-owner's binding: its authority is gone.
    const bindings = await api(
      "GET",
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${s.org.uid}&identity=${subOwner.uid}`,
    );
    for (const b of bindings.json.roleBindings) {
      expect((await api("DELETE", `/iam/v2beta1/roleBindings/${b.uid}`)).status).toBe(200);
    }
    const carol = await signIn(uid, "carol", ["eng"]);
    expect(await membersOf(team)).toEqual([bob]);
    expect(carol).not.toBe(bob);
    // Leaving needs no authority: bob's claim no longer has the group.
    await signIn(uid, "bob", []);
    expect(await membersOf(team)).toEqual([]);
  });

  it("refuses mappings the writer may not make, or to another organization's team", async () => {
    const team = await teamWithEditor("owners-only");
    // A writer who holds identity_providers.create and teams.update but not editor's
    // capabilities cannot map people into a team that holds editor.
    const role = await api("POST", `/iam/v2beta1/roles/${s.org.uid}`, {
      name: "sso-admin",
      capabilities: [
        "groups.list",
        "teams.list",
        "teams.update",
        "identity_providers.create",
        "role_bindings.create",
      ],
    });
    expect(role.status, JSON.stringify(role.json)).toBe(200);
    const admin = await s.gh.makeIdentity(s.org.uid, [role.json.uid]);
    const refused = await provider([{ group: "eng", teamUid: team }], admin);
    expect(refused.status).toBe(403);
    const other = await s.gh.makeOrg("other");
    const theirs = await api("POST", `/iam/v2beta1/teams/${other.uid}`, { name: "x" }, other.owner);
    const foreign = await provider([{ group: "eng", teamUid: theirs.json.uid }], s.org.owner);
    expect(foreign.status).toBe(400);
    expect(JSON.stringify(foreign.json)).not.toContain(theirs.json.uid);
  });
});
