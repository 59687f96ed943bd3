import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { backends, startTestServer, type TestServer } from "../helpers/test-server.js";

describe.each(backends)("audit trail on %s", (backend) => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
  });
  afterAll(() => ts?.close());

  const eventsOf = (headers: Record<string, string>) =>
    createClient(EventsService, transportFor("connect", ts.url, headers));

  it("records each change once, with its actor, protocol and changed fields", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    const group = await iam.groups.createGroup({ parent: org.uid, group: { name: "audited" } });
    await iam.groups.updateGroup({
      group: { uid: group.uid, description: "new words" },
      updateMask: { paths: ["description"] },
    });
    // A refused change records nothing.
    await expect(
      iam.groups.createGroup({ parent: org.uid, group: { name: "audited" } }),
    ).rejects.toMatchObject({ code: Code.AlreadyExists });
    await iam.groups.deleteGroup({ uid: group.uid });

    const res = await eventsOf(org.owner.headers).listEvents({
      uidp: { descendantsOf: org.uid, childrenOf: "" },
    });
    expect(res.events.map((e) => [e.type, e.subject])).toEqual([
      ["dev.gatehouse.iam.group.created.v1", group.uid],
      ["dev.gatehouse.iam.group.updated.v1", group.uid],
      ["dev.gatehouse.iam.group.deleted.v1", group.uid],
    ]);
    expect(res.totalCount).toBe(3n);
    const [created, updated] = res.events;
    expect(created!.specversion).toBe("1.0");
    expect(created!.source).toBe("/gatehouse.iam.v2beta1.GroupsService");
    expect(created!.data).toMatchObject({ actor: { uid: org.owner.uid }, protocol: "grpc" });
    expect(typeof created!.data?.requestId).toBe("string");
    expect(updated!.data).toMatchObject({ changedFields: ["description"] });
  });

  // CreateIdentityProvider reads the organization's provider count in its transaction before
  // it writes: that read must not take the call's event (with the organization as subject).
  it("records a change made after a read in the same transaction about the change", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const viewer = builtinRoles.find((r) => r.name === "viewer")!;
    const provider = await iam.identityProviders.createIdentityProvider({
      parent: org.uid,
      identityProvider: {
        name: "corp",
        defaultRole: viewer.uid,
        oidc: { issuer: "https://login.example.com", clientId: "gatehouse", clientSecret: "s" },
      },
    });
    const res = await eventsOf(org.owner.headers).listEvents({
      type: "dev.gatehouse.iam.identity_provider.created.v1",
      uidp: { descendantsOf: org.uid, childrenOf: "" },
    });
    expect(res.events.map((e) => e.subject)).toEqual([provider.uid]);
  });

  it("filters by type, subject and time, and pages", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const a = await iam.groups.createGroup({ parent: org.uid, group: { name: "a" } });
    await iam.groups.createGroup({ parent: org.uid, group: { name: "b" } });
    await iam.groups.updateGroup({
      group: { uid: a.uid, name: "a2" },
      updateMask: { paths: ["name"] },
    });
    const events = eventsOf(org.owner.headers);
    const created = await events.listEvents({
      type: "dev.gatehouse.iam.group.created.v1",
      uidp: { descendantsOf: org.uid, childrenOf: "" },
    });
    expect(created.events).toHaveLength(2);
    const aboutA = await events.listEvents({ uidp: { childrenOf: a.uid, descendantsOf: "" } });
    expect(aboutA.events.map((e) => e.type)).toEqual([
      "dev.gatehouse.iam.group.created.v1",
      "dev.gatehouse.iam.group.updated.v1",
    ]);
    const first = await events.listEvents({ pageSize: 2, orderBy: "create_time desc" });
    expect(first.events).toHaveLength(2);
    expect(first.totalCount).toBe(3n);
    const rest = await events.listEvents({
      pageSize: 2,
      orderBy: "create_time desc",
      pageToken: first.nextPageToken!,
    });
    expect(rest.events).toHaveLength(1);
    const later = await events.listEvents({
      startTime: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 },
    });
    expect(later.events).toHaveLength(0);
    const byActor = await events.listEvents({ actor: "nobody" });
    expect(byActor.totalCount).toBe(0n);
  });

  it("shows an organization's events to its owners only", async () => {
    const a = await ts.makeOrg();
    const b = await ts.makeOrg();
    await iamClients(transportFor("connect", ts.url, a.owner.headers)).groups.createGroup({
      parent: a.uid,
      group: { name: "private" },
    });
    const seenByB = await eventsOf(b.owner.headers).listEvents({});
    expect(seenByB.events.filter((e) => e.subject.startsWith(a.uid))).toEqual([]);
    const asB = await eventsOf(b.owner.headers)
      .listEvents({ uidp: { descendantsOf: a.uid, childrenOf: "" } })
      .catch((e: unknown) => e);
    if (asB instanceof ConnectError) expect(asB.code).toBe(Code.PermissionDenied);
    else expect((asB as { events: unknown[] }).events).toEqual([]);
    const viewer = await ts.makeIdentity(a.uid, ["viewer"]);
    // events.list is the owners': a viewer of A lists nothing, A's group creation included.
    const seenByViewer = await eventsOf(viewer.headers).listEvents({});
    expect(seenByViewer.totalCount).toBe(0n);
    const seenByOwner = await eventsOf(a.owner.headers).listEvents({});
    expect(seenByOwner.totalCount).toBe(1n);
  });
});
