import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { serviceEntries } from "../../src/service-table.js";
import { badRequestFields, type Json, restCall } from "../helpers/rest-client.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

// A REST client that GETs a resource and PATCHes the same JSON back must get 200 and the
// resource unchanged (docs/api.md: output-only paths are ignored), for every resource with
// an Update RPC; IMMUTABLE fields pass when sent back unchanged and are refused when changed.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

let org: TestOrg;
let admin: TestCaller;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("patch-back");
  // The owner role excludes advisory writes: an advisories.admin identity writes them.
  admin = await ts.makeIdentity(org.uid, ["owner", "advisories.admin"]);
});

const rest = (method: string, path: string, body?: unknown) =>
  restCall(ts.url, method, path, body, admin.headers);

/** How to make one resource of each updatable kind: its collection path and a Create body. */
const makers: Record<string, () => Promise<{ path: string; body: Json }>> = {
  "gatehouse.iam.v2beta1.GroupsService": async () => ({
    path: `/iam/v2beta1/groups/${org.uid}`,
    body: { name: "team", description: "d" },
  }),
  "gatehouse.iam.v2beta1.IdentitiesService": async () => ({
    path: `/iam/v2beta1/identities/${org.uid}`,
    body: { name: "ci", claimMatch: { issuer: "https://ci.test", subject: "main" } },
  }),
  "gatehouse.iam.v2beta1.RolesService": async () => ({
    path: `/iam/v2beta1/roles/${org.uid}`,
    body: { name: "reader", description: "d", capabilities: ["groups.list"] },
  }),
  "gatehouse.iam.v2beta1.RoleBindingsService": async () => {
    const who = await ts.makeIdentity(org.uid);
    return {
      path: `/iam/v2beta1/roleBindings/${org.uid}`,
      body: { identityUid: who.uid, roleUid: viewer.uid },
    };
  },
  "gatehouse.iam.v2beta1.TeamsService": async () => ({
    path: `/iam/v2beta1/teams/${org.uid}`,
    body: { name: "ops", description: "on call" },
  }),
  "gatehouse.iam.v2beta1.GroupInvitesService": async () => ({
    path: `/iam/v2beta1/groupInvites/${org.uid}`,
    body: { roleUid: viewer.uid, email: "new@example.com" },
  }),
  "gatehouse.iam.v2beta1.IdentityProvidersService": async () => ({
    path: `/iam/v2beta1/identityProviders/${org.uid}`,
    body: {
      name: "corp",
      defaultRole: viewer.uid,
      oidc: { issuer: "https://login.example.com", clientId: "c", clientSecret: "s3cret" },
      emailDomains: ["example.com"],
    },
  }),
  "gatehouse.iam.v2beta1.AccountAssociationsService": async () => {
    const group = (await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "cloud" })).json;
    return {
      path: `/iam/v2beta1/accountAssociations/${group.uid}`,
      body: { name: "aa", amazon: { account: "123456789012" } },
    };
  },
  "gatehouse.registry.v2beta1.ReposService": async () => ({
    path: `/registry/v2beta1/repos/${org.uid}`,
    body: { name: "app", description: "d", aliases: ["web"] },
  }),
  "gatehouse.vulnerabilities.v2beta1.AdvisoriesService": async () => ({
    path: `/vulnerabilities/v2beta1/advisories/${org.uid}`,
    body: {
      advisoryId: "GO-2024-0001",
      aliases: ["CVE-2024-1234"],
      summary: "bad things",
      artifactName: "app",
      severities: [{ type: "CVSS_V3", score: "7.5" }],
      events: [{ time: "2024-01-02T03:04:05.000Z", type: "DETECTED" }],
    },
  }),
  "gatehouse.events.v2beta1.EventsService": async () => ({
    path: `/events/v2beta1/subscriptions/${org.uid}`,
    body: {
      name: "hook",
      sink: "https://hooks.example.com/x",
      eventTypes: ["dev.gatehouse.iam.group.created.v1"],
    },
  }),
};

/** Every v2 service with an Update RPC served over REST PATCH, from the service table. */
const updatable = serviceEntries
  .map((e) => e.service)
  .filter((s) => s.typeName.includes(".v2beta1."))
  .filter((s) => s.methods.some((m) => m.name.startsWith("Update")));

describe("GET, then PATCH the same JSON back", () => {
  it("has a maker for every v2 service with an Update RPC", () => {
    expect(updatable.map((s) => s.typeName).sort()).toEqual(Object.keys(makers).sort());
  });

  it.each(updatable.map((s) => s.typeName))("%s answers 200 and changes nothing", async (name) => {
    const { path, body } = await makers[name]!();
    const made = await rest("POST", path, body);
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    const resource = `${path.slice(0, path.indexOf("/", path.indexOf("/v2beta1/") + 9))}/${made.json.uid}`;
    const got = await rest("GET", resource);
    expect(got.status).toBe(200);
    const back = await rest("PATCH", resource, got.json);
    expect(back.status, JSON.stringify(back.json)).toBe(200);
    const { updateTime: _a, ...before } = got.json;
    const { updateTime: _b, ...after } = back.json;
    expect(after).toEqual(before);
  });
});

describe("IMMUTABLE fields", () => {
  it("refuses another role on a group invite and takes the same one back", async () => {
    const made = await rest("POST", `/iam/v2beta1/groupInvites/${org.uid}`, {
      roleUid: viewer.uid,
    });
    const path = `/iam/v2beta1/groupInvites/${made.json.uid}`;
    const changed = await rest("PATCH", path, { roleUid: editor.uid });
    expect(changed.status).toBe(400);
    expect(badRequestFields(changed.json)).toEqual(["roleUid"]);
    const same = await rest("PATCH", path, { roleUid: viewer.uid, email: "x@example.com" });
    expect(same.status).toBe(200);
    expect(same.json).toMatchObject({ roleUid: viewer.uid, email: "x@example.com" });
  });

  it("refuses another identity on a role binding and takes the same one back", async () => {
    const [a, b] = [await ts.makeIdentity(org.uid), await ts.makeIdentity(org.uid)];
    const made = await rest("POST", `/iam/v2beta1/roleBindings/${org.uid}`, {
      identityUid: a.uid,
      roleUid: viewer.uid,
    });
    const path = `/iam/v2beta1/roleBindings/${made.json.uid}`;
    const changed = await rest("PATCH", path, { identityUid: b.uid, roleUid: editor.uid });
    expect(changed.status).toBe(400);
    expect(badRequestFields(changed.json)).toEqual(["identityUid"]);
    expect((await rest("GET", path)).json.role.uid).toBe(viewer.uid);
    const same = await rest("PATCH", path, { identityUid: a.uid, roleUid: editor.uid });
    expect(same.status).toBe(200);
    expect(same.json).toMatchObject({ identity: { uid: a.uid }, role: { uid: editor.uid } });
  });
});
