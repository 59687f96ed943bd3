import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { bootstrapOrganization } from "../../src/cli/bootstrap.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { backends, startTestServer, type TestServer } from "../helpers/test-server.js";
import { v1Clients } from "../helpers/v1-clients.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

// What an access review reads in an event: the resource as named at the change, an update's
// old and new values, what a delete removed; never a secret's value.
describe.each(backends)("what an event says changed, on %s", (backend) => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
  });
  afterAll(async () => {
    await ts?.close();
  });

  const trailOf = async (headers: Record<string, string>, uid: string) =>
    (
      await createClient(EventsService, transportFor("connect", ts.url, headers)).listEvents({
        uidp: { childrenOf: uid, descendantsOf: "" },
        pageSize: 100,
      })
    ).events;

  it("names the resource, each changed field's old and new value, and what a delete removed", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    const group = await iam.groups.createGroup({
      parent: org.uid,
      group: { name: "eng", description: "old words" },
    });
    await iam.groups.updateGroup({
      group: { uid: group.uid, name: "platform", description: "new words" },
      updateMask: { paths: ["name", "description"] },
    });
    await iam.groups.deleteGroup({ uid: group.uid });
    const [created, updated, deleted] = await trailOf(org.owner.headers, group.uid);
    expect(created!.data).toMatchObject({
      resource: { uid: group.uid, name: "eng", parent: org.uid },
    });
    expect(updated!.data?.changes).toEqual({
      name: { old: "eng", new: "platform" },
      description: { old: "old words", new: "new words" },
    });
    expect(updated!.data?.resource).toEqual({ uid: group.uid, name: "platform", parent: org.uid });
    expect(deleted!.data).toMatchObject({
      resource: { uid: group.uid, name: "platform", parent: org.uid },
      deleted: { uid: group.uid, name: "platform", description: "new words" },
    });
    expect(deleted!.data?.changes).toBeUndefined();
  });

  it("records a secret's change as changed, with no value, and never a secret", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const first = "first-client-secret-value";
    const second = "second-client-secret-value";
    const provider = await iam.identityProviders.createIdentityProvider({
      parent: org.uid,
      identityProvider: {
        name: "corp",
        defaultRole: viewer.uid,
        oidc: { issuer: "https://login.example.com", clientId: "one", clientSecret: first },
      },
    });
    await iam.identityProviders.updateIdentityProvider({
      identityProvider: {
        uid: provider.uid,
        oidc: { issuer: "https://login.example.com", clientId: "two", clientSecret: second },
      },
      updateMask: { paths: ["oidc.client_id", "oidc.client_secret"] },
    });
    await iam.identityProviders.deleteIdentityProvider({ uid: provider.uid });
    const trail = await trailOf(org.owner.headers, provider.uid);
    expect(trail.map((e) => e.type)).toEqual([
      "dev.gatehouse.iam.identity_provider.created.v1",
      "dev.gatehouse.iam.identity_provider.updated.v1",
      "dev.gatehouse.iam.identity_provider.deleted.v1",
    ]);
    expect(trail[1]!.data?.changes).toEqual({
      "oidc.clientId": { old: "one", new: "two" },
      "oidc.clientSecret": { changed: true },
    });
    expect(trail[2]!.data?.deleted).toMatchObject({ name: "corp", "oidc.clientId": "two" });
    expect(trail[2]!.data?.deleted).not.toHaveProperty("oidc.clientSecret");
    const text = JSON.stringify(trail.map((e) => e.data));
    expect(text).not.toContain(first);
    expect(text).not.toContain(second);
  });

  it("tells a binding's change of role by name, over v2 and v1 alike", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const alice = await ts.makeIdentity(org.uid);
    const grant = await iam.roleBindings.createRoleBinding({
      parent: org.uid,
      roleBinding: { identityUid: alice.uid, roleUid: viewer.uid },
    });
    await iam.roleBindings.updateRoleBinding({
      roleBinding: { uid: grant.uid, roleUid: editor.uid },
      updateMask: { paths: ["role_uid"] },
    });
    const v1 = v1Clients(transportFor("grpc", ts.url, org.owner.headers));
    await v1.roleBindings.update({ id: grant.uid, role: viewer.uid });
    await v1.roleBindings.delete({ id: grant.uid });
    const trail = await trailOf(org.owner.headers, grant.uid);
    const role = (r: typeof viewer) => ({ uid: r.uid, name: r.name });
    expect(trail.map((e) => [e.type, e.data?.changes])).toEqual([
      ["dev.gatehouse.iam.role_binding.created.v1", undefined],
      [
        "dev.gatehouse.iam.role_binding.updated.v1",
        { role: { old: role(viewer), new: role(editor) } },
      ],
      [
        "dev.gatehouse.iam.role_binding.updated.v1",
        { role: { old: role(editor), new: role(viewer) } },
      ],
      ["dev.gatehouse.iam.role_binding.deleted.v1", undefined],
    ]);
    expect(trail[1]!.data?.roleBinding).toMatchObject({ role: role(editor) });
    expect(trail[3]!.data?.deleted).toMatchObject({
      identity: { uid: alice.uid },
      role: role(viewer),
      group: { uid: org.uid },
    });
  });

  it("says the operator's bootstrap made an organization's first grant", async () => {
    const { orgUid, identityUid } = await bootstrapOrganization(ts.store, "booted", Date.now());
    const reviewer = await ts.makeIdentity(orgUid, ["owner"]);
    const events = await createClient(
      EventsService,
      transportFor("grpc", ts.url, reviewer.headers),
    ).listEvents({ uidp: { descendantsOf: orgUid, childrenOf: "" } });
    // One transaction's events share their time: their order among themselves is the ids'.
    const seen = events.events.map((e) => [e.type, e.data?.reason, e.data?.operator]);
    expect(seen.sort()).toEqual([
      ["dev.gatehouse.iam.group.created.v1", "bootstrap", "gatehouse bootstrap"],
      ["dev.gatehouse.iam.identity.created.v1", "bootstrap", "gatehouse bootstrap"],
      ["dev.gatehouse.iam.role_binding.created.v1", "bootstrap", "gatehouse bootstrap"],
    ]);
    const grant = events.events.find((e) => e.type.includes(".role_binding."));
    expect(grant?.data?.roleBinding).toMatchObject({
      identity: { uid: identityUid, name: "bootstrap owner" },
      role: { name: "owner" },
      group: { uid: orgUid, name: "booted" },
    });
  });
});
