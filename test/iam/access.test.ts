import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { AccessService, AccessShortfall_Lack } from "../../gen/gatehouse/iam/v2beta1/access_pb.js";
import { failure, protocols, transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// "Why may X do Y here": CheckAccess explains the authorizer's decision with the role bindings
// behind it; ListCallerCapabilities tells a caller what it may do at a group.

let org: TestOrg;
let team: string;
let squad: string;
let other: string;
let editor: string;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("explain");
  const mk = async (parent: string, name: string) =>
    (await restCall(ts.url, "POST", `/iam/v2beta1/groups/${parent}`, { name }, org.owner.headers))
      .json.uid as string;
  team = await mk(org.uid, "team");
  squad = await mk(team, "squad");
  other = await mk(org.uid, "other");
  const roles = await restCall(
    ts.url,
    "GET",
    "/iam/v2beta1/roles?name=editor",
    undefined,
    org.owner.headers,
  );
  editor = roles.json.roles[0].uid;
});

const check = (headers: Record<string, string>, q: Record<string, string>) =>
  restCall(
    ts.url,
    "GET",
    `/iam/v2beta1/access:check?${new URLSearchParams(q)}`,
    undefined,
    headers,
  );

describe.each(protocols)("over %s", (protocol) => {
  it("lists the bindings that grant a capability, nearest first, inherited or direct", async () => {
    const ci = await ts.makeIdentity(team, ["viewer"], org.uid);
    const direct = await ts.makeIdentity(team, ["editor"], squad);
    const access = createClient(AccessService, transportFor(protocol, ts.url, org.owner.headers));
    const viewerAtOrg = await access.checkAccess({
      identityUid: ci.uid,
      capability: "repo.list",
      groupUid: squad,
    });
    expect(viewerAtOrg.allowed).toBe(true);
    expect(viewerAtOrg.grants).toHaveLength(1);
    expect(viewerAtOrg.grants[0]?.inherited).toBe(true);
    expect(viewerAtOrg.grants[0]?.roleBinding?.group?.uid).toBe(org.uid);
    expect(viewerAtOrg.grants[0]?.roleBinding?.role?.name).toBe("viewer");
    expect(viewerAtOrg.shortfalls).toEqual([]);

    const atItself = await access.checkAccess({
      identityUid: direct.uid,
      capability: "repo.create",
      groupUid: squad,
    });
    expect(atItself.allowed).toBe(true);
    expect(atItself.grants.map((g) => [g.roleBinding?.group?.name, g.inherited])).toEqual([
      ["squad", false],
    ]);
  });

  it("when denied, names the nearest bindings and what each lacks", async () => {
    const ci = await ts.makeIdentity(team, ["viewer"], team);
    // Editor holds repo.create, but at a group beside `team`: it lacks the scope.
    const page = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/roleBindings/${other}`,
      { identityUid: ci.uid, roleUid: editor },
      org.owner.headers,
    );
    expect(page.status).toBe(200);
    const access = createClient(AccessService, transportFor(protocol, ts.url, org.owner.headers));
    const res = await access.checkAccess({
      identityUid: ci.uid,
      capability: "repo.create",
      groupUid: squad,
    });
    expect(res.allowed).toBe(false);
    expect(res.grants).toEqual([]);
    expect(
      res.shortfalls.map((s) => [s.roleBinding?.group?.name, s.roleBinding?.role?.name, s.lack]),
    ).toEqual([
      ["team", "viewer", AccessShortfall_Lack.CAPABILITY],
      ["other", "editor", AccessShortfall_Lack.SCOPE],
    ]);
  });
});

it("answers over REST, and refuses an unknown capability or a malformed uid clearly", async () => {
  const ci = await ts.makeIdentity(team, ["registry.pull"]);
  const ok = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "registry.pull",
    groupUid: team,
  });
  expect(ok.status).toBe(200);
  expect(ok.json.allowed).toBe(true);
  expect(ok.json.grants[0].roleBinding.role.name).toBe("registry.pull");
  const denied = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "registry.push",
    groupUid: team,
  });
  expect(denied.status).toBe(200);
  expect(denied.json.allowed ?? false).toBe(false);
  expect(denied.json.shortfalls[0].lack).toBe("LACK_CAPABILITY");
  const unknown = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "repo.fly",
    groupUid: team,
  });
  expect(unknown.status).toBe(400);
  expect(JSON.stringify(unknown.json)).toContain("capability");
  // The other spelling of a kind (repos.* for repo.*) is an alias, asked as the catalog's.
  const plural = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "repos.create",
    groupUid: team,
  });
  const canonical = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "repo.create",
    groupUid: team,
  });
  expect(plural.status).toBe(200);
  expect(plural.json).toEqual(canonical.json);
  // A near miss names what was meant.
  const typo = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "repo.craete",
    groupUid: team,
  });
  expect(typo.status).toBe(400);
  expect(typo.json.message).toContain('did you mean "repo.create"?');
  const far = await check(org.owner.headers, {
    identityUid: ci.uid,
    capability: "launch.missiles",
    groupUid: team,
  });
  expect(far.json.message).not.toContain("did you mean");
  const role = await restCall(
    ts.url,
    "POST",
    `/iam/v2beta1/roles/${team}`,
    { name: "typo", capabilities: ["repo.list", "tag.lsit"] },
    org.owner.headers,
  );
  expect(role.status).toBe(400);
  expect(role.json.message).toContain('"tag.lsit" (did you mean "tag.list"?)');
  const malformed = await check(org.owner.headers, {
    identityUid: "nope",
    capability: "repo.list",
    groupUid: team,
  });
  expect(malformed.status).toBe(400);
});

it("lets anyone explain its own access, and only role_bindings.list holders another's", async () => {
  const puller = await ts.makeIdentity(team, ["registry.pull"]);
  const viewer = await ts.makeIdentity(team, ["viewer"]);
  const self = await check(puller.headers, {
    identityUid: puller.uid,
    capability: "registry.pull",
    groupUid: squad,
  });
  expect(self.status).toBe(200);
  expect(self.json.allowed).toBe(true);
  const about = { identityUid: viewer.uid, capability: "repo.list", groupUid: team };
  expect((await check(puller.headers, about)).status).toBe(403);
  expect((await check(viewer.headers, { ...about, identityUid: puller.uid })).status).toBe(200);
  const access = createClient(AccessService, transportFor("connect", ts.url, puller.headers));
  expect((await failure(access.checkAccess(about))).code).toBe(7);
});

it("shows a binding elsewhere only to a caller who may list it there", async () => {
  const ci = await ts.makeIdentity(team, ["viewer"], team);
  const granted = await restCall(
    ts.url,
    "POST",
    `/iam/v2beta1/roleBindings/${other}`,
    { identityUid: ci.uid, roleUid: editor },
    org.owner.headers,
  );
  expect(granted.status).toBe(200);
  // An administrator of team alone: it may list team's bindings, not other's.
  const teamAdmin = await ts.makeIdentity(team, ["viewer"], team);
  const q = { identityUid: ci.uid, capability: "repo.create", groupUid: squad };
  const fromTeam = await check(teamAdmin.headers, q);
  expect(fromTeam.status).toBe(200);
  expect(fromTeam.json.shortfalls.map((s: { lack: string }) => s.lack)).toEqual([
    "LACK_CAPABILITY",
  ]);
  const fromOwner = await check(org.owner.headers, q);
  expect(fromOwner.json.shortfalls.map((s: { lack: string }) => s.lack)).toEqual([
    "LACK_CAPABILITY",
    "LACK_SCOPE",
  ]);
  // About itself, an identity sees all of its own bindings in the organization.
  const self = await check(ci.headers, q);
  expect(self.json.shortfalls).toHaveLength(2);
});

it("lists the caller's capabilities at a group, in catalog order, and none elsewhere", async () => {
  const ci = await ts.makeIdentity(team, ["registry.pull"]);
  const access = createClient(AccessService, transportFor("grpc", ts.url, ci.headers));
  expect((await access.listCallerCapabilities({ groupUid: squad })).capabilities).toEqual([
    "groups.list",
    "repo.list",
    "tag.list",
    "registry.pull",
  ]);
  expect((await access.listCallerCapabilities({ groupUid: other })).capabilities).toEqual([]);
  const rest = await restCall(
    ts.url,
    "GET",
    `/iam/v2beta1/access:capabilities?groupUid=${encodeURIComponent(org.uid)}`,
    undefined,
    org.owner.headers,
  );
  expect(rest.status).toBe(200);
  expect(rest.json.capabilities).toContain("role_bindings.create");
  expect(rest.json.capabilities).not.toContain("advisories.create");
});

describe.each(protocols)(
  "a denial's granting roles and the capabilities' words over %s",
  (protocol) => {
    it("names the roles that would grant, the organization's own only where the caller may list them", async () => {
      const access = createClient(AccessService, transportFor(protocol, ts.url, org.owner.headers));
      // A custom role at the team that holds repo.create, and one at `other` (not usable at squad).
      const mkRole = async (parent: string, name: string) =>
        (
          await restCall(
            ts.url,
            "POST",
            `/iam/v2beta1/roles/${parent}`,
            { name, capabilities: ["repo.create", "repo.list"] },
            org.owner.headers,
          )
        ).json.uid as string;
      const pusher = await mkRole(team, `pusher-${protocol}`);
      await mkRole(other, `elsewhere-${protocol}`);
      const ci = await ts.makeIdentity(team, ["viewer"], org.uid);
      const denied = await access.checkAccess({
        identityUid: ci.uid,
        capability: "repo.create",
        groupUid: squad,
      });
      expect(denied.allowed).toBe(false);
      const names = denied.grantingRoles.map((r) => r.name);
      expect(names).toEqual(expect.arrayContaining(["editor", "owner", "registry.push"]));
      expect(names).toContain(`pusher-${protocol}`);
      expect(names).not.toContain(`elsewhere-${protocol}`);
      expect(names).not.toContain("viewer");
      expect(denied.grantingRoles.find((r) => r.name === `pusher-${protocol}`)?.uid).toBe(pusher);
      expect(denied.capabilityDescription).not.toBe("");
      // Allowed: nothing to suggest.
      const allowed = await access.checkAccess({
        identityUid: ci.uid,
        capability: "repo.list",
        groupUid: squad,
      });
      expect(allowed.grantingRoles).toEqual([]);
      // A caller who may not list roles (a binder holding role_bindings.list only) sees the
      // built-in roles alone.
      const binderRole = await restCall(
        ts.url,
        "POST",
        `/iam/v2beta1/roles/${org.uid}`,
        { name: `binder-${protocol}`, capabilities: ["role_bindings.list"] },
        org.owner.headers,
      );
      const binder = await ts.makeIdentity(org.uid, [binderRole.json.uid]);
      const asBinder = createClient(AccessService, transportFor(protocol, ts.url, binder.headers));
      const seen = await asBinder.checkAccess({
        identityUid: ci.uid,
        capability: "repo.create",
        groupUid: squad,
      });
      expect(seen.grantingRoles.map((r) => r.name)).not.toContain(`pusher-${protocol}`);
      expect(seen.grantingRoles.map((r) => r.name)).toContain("editor");
    });

    it("describes each capability the caller holds, in the same order", async () => {
      const access = createClient(AccessService, transportFor(protocol, ts.url, org.owner.headers));
      const res = await access.listCallerCapabilities({ groupUid: team });
      expect(res.descriptions).toHaveLength(res.capabilities.length);
      expect(res.descriptions.every((d) => d.length > 0)).toBe(true);
      expect(new Set(res.descriptions).size).toBe(res.descriptions.length);
    });
  },
);
