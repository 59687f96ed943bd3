import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { eventKey, inMadeOrder } from "../helpers/list-order.js";
import { backends, startTestServer, type TestServer } from "../helpers/test-server.js";
import { v1Clients } from "../helpers/v1-clients.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";

type Json = Record<string, unknown>;
const groupCreated = "dev.gatehouse.iam.group.created.v1";
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

describe.each(backends)("audit trail on %s", (backend) => {
  let ts: TestServer;
  let sink: WebhookSink;
  beforeAll(async () => {
    sink = await startWebhookSink();
    // A real sink on loopback, polled often: the subscriber test below.
    ts = await startTestServer(
      { GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: "true", GATEHOUSE_WEBHOOK_POLL_MS: "50" },
      { backend },
    );
  });
  afterAll(async () => {
    await ts?.close();
    await sink?.close();
  });

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
    // An event about a group below `a` lies below `a` in the uid tree too: children_of is only
    // the events about `a` itself.
    const child = await iam.groups.createGroup({ parent: a.uid, group: { name: "c" } });
    const aboutA = await events.listEvents({ uidp: { childrenOf: a.uid, descendantsOf: "" } });
    expect(aboutA.events.map((e) => e.type)).toEqual([
      "dev.gatehouse.iam.group.created.v1",
      "dev.gatehouse.iam.group.updated.v1",
    ]);
    expect(aboutA.events.every((e) => e.subject === a.uid)).toBe(true);
    const belowA = await events.listEvents({ uidp: { descendantsOf: a.uid, childrenOf: "" } });
    expect(belowA.events.map(eventKey)).toEqual(
      inMadeOrder(
        belowA.events,
        [
          "dev.gatehouse.iam.group.created.v1",
          "dev.gatehouse.iam.group.updated.v1",
          "dev.gatehouse.iam.group.created.v1",
        ].map((type, i) => eventKey({ type, subject: i < 2 ? a.uid : child.uid })),
        eventKey,
      ),
    );
    const first = await events.listEvents({ pageSize: 2, orderBy: "create_time desc" });
    expect(first.events).toHaveLength(2);
    expect(first.totalCount).toBe(4n);
    const rest = await events.listEvents({
      pageSize: 2,
      orderBy: "create_time desc",
      pageToken: first.nextPageToken!,
    });
    expect(rest.events).toHaveLength(2);
    const later = await events.listEvents({
      startTime: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 },
    });
    expect(later.events).toHaveLength(0);
    const byActor = await events.listEvents({ actor: "nobody" });
    expect(byActor.totalCount).toBe(0n);
  });

  it("filters by type family: whole words of a type, several at once", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const group = await iam.groups.createGroup({ parent: org.uid, group: { name: "fam" } });
    const who = await ts.makeIdentity(group.uid);
    const b = await iam.roleBindings.createRoleBinding({
      parent: group.uid,
      roleBinding: { identityUid: who.uid, roleUid: viewer.uid },
    });
    await iam.roleBindings.deleteRoleBinding({ uid: b.uid });
    await iam.roles.createRole({
      parent: org.uid,
      role: { name: "role_x", capabilities: ["groups.list"] },
    });
    const events = eventsOf(org.owner.headers);
    const short = (e: { type: string }) => e.type.split(".").slice(2, 5).join(".");
    const below = { descendantsOf: org.uid, childrenOf: "" };
    const typesOf = async (type: string) =>
      (await events.listEvents({ type, uidp: below })).events.map(short);
    // The types given, in the order they were made, but events of one millisecond by uid.
    const all = (await events.listEvents({ uidp: below })).events;
    const made = (...types: string[]) => inMadeOrder(all, types, short);
    // `role` is a word of role.created, never of role_binding.created (nor `_` a wildcard).
    expect(await typesOf("role_binding")).toEqual(
      made("iam.role_binding.created", "iam.role_binding.deleted"),
    );
    expect(await typesOf("role")).toEqual(["iam.role.created"]);
    expect(await typesOf("role.binding")).toEqual([]);
    expect(await typesOf("iam.group,role_binding.deleted")).toEqual(
      made("iam.group.created", "iam.role_binding.deleted"),
    );
    expect(await typesOf("dev.gatehouse.iam.role.created.v1, created")).toEqual(
      made("iam.group.created", "iam.role_binding.created", "iam.role.created"),
    );
    await expect(events.listEvents({ type: "Role Binding" })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
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

  // The same change records the same type whatever the API version: a subscriber of the
  // documented types must see a v1 write as it sees the v2 one.
  it("records a v1 write under the type of the same v2 write, one event per batch binding", async () => {
    const org = await ts.makeOrg();
    const v1 = v1Clients(transportFor("grpc", ts.url, org.owner.headers));
    const group = await v1.groups.create({ parent: org.uid, group: { name: "through-v1" } });
    await v1.groups.update({ id: group.id, name: "through-v1", description: "words" });
    const a = await ts.makeIdentity(group.id);
    const b = await ts.makeIdentity(group.id);
    const c = await ts.makeIdentity(group.id);
    const one = await v1.roleBindings.create({
      parent: group.id,
      roleBinding: { identity: a.uid, role: viewer.uid },
    });
    const batch = await v1.roleBindings.createBatch({
      parent: group.id,
      roleBindings: [
        { identity: b.uid, role: viewer.uid },
        { identity: c.uid, role: editor.uid },
      ],
    });
    // A batch is all or nothing: a refused binding undoes those before it, and records nothing.
    await expect(
      v1.roleBindings.createBatch({
        parent: group.id,
        roleBindings: [
          { identity: c.uid, role: viewer.uid },
          { identity: b.uid, role: `${org.uid}/ffffffffffffffff` },
        ],
      }),
    ).rejects.toBeInstanceOf(ConnectError);
    const bindings = await iamClients(
      transportFor("connect", ts.url, org.owner.headers),
    ).roleBindings.listRoleBindings({ uidp: { childrenOf: group.id, descendantsOf: "" } });
    const partial = bindings.roleBindings.find(
      (x) => x.identity?.uid === c.uid && x.role?.uid === viewer.uid,
    );
    expect(partial).toBeUndefined();
    await v1.roleBindings.update({ id: one.id, role: editor.uid });
    await v1.roleBindings.delete({ id: one.id });
    await v1.groups.delete({
      id: (await v1.groups.create({ parent: org.uid, group: { name: "gone" } })).id,
    });

    const res = await eventsOf(org.owner.headers).listEvents({
      uidp: { descendantsOf: org.uid, childrenOf: "" },
      pageSize: 100,
    });
    const gone = res.events.find((e) => e.type === "dev.gatehouse.iam.group.deleted.v1")!.subject;
    // In the order the calls were made, but events of one millisecond (the batch's two, one
    // transaction; calls that came quickly) by uid (docs/events.md).
    const made = [
      [groupCreated, group.id],
      ["dev.gatehouse.iam.group.updated.v1", group.id],
      // makeIdentity writes through the store: no event of its own.
      ["dev.gatehouse.iam.role_binding.created.v1", one.id],
      ...batch.roleBindings.map((b) => ["dev.gatehouse.iam.role_binding.created.v1", b.id]),
      ["dev.gatehouse.iam.role_binding.updated.v1", one.id],
      ["dev.gatehouse.iam.role_binding.deleted.v1", one.id],
      [groupCreated, gone],
      ["dev.gatehouse.iam.group.deleted.v1", gone],
    ].map(([type, subject]) => eventKey({ type: type!, subject: subject! }));
    expect(res.events.map(eventKey)).toEqual(inMadeOrder(res.events, made, eventKey));
    // The source names the API the caller used; the actor, protocol and mask are the call's.
    const of = (type: string, subject: string) =>
      res.events.find((e) => e.type === type && e.subject === subject);
    const created = of(groupCreated, group.id);
    const updated = of("dev.gatehouse.iam.group.updated.v1", group.id);
    expect(created!.source).toBe("/gatehouse.iam.v1.GroupsService");
    expect(created!.data).toMatchObject({ actor: { uid: org.owner.uid }, protocol: "grpc" });
    expect(updated!.data).toMatchObject({ changedFields: ["name", "description"] });
    // The batch's events are the batch call's: one request id for both.
    const [x, y] = batch.roleBindings.map((b) =>
      of("dev.gatehouse.iam.role_binding.created.v1", b.id),
    );
    expect(x!.data?.requestId).toBe(y!.data?.requestId);
    expect(x!.source).toBe("/gatehouse.iam.v1.RoleBindingsService");
  });

  it("delivers a group created through v1 REST to a subscriber of the group-created type", async () => {
    const org = await ts.makeOrg();
    const rest = (method: string, path: string, body?: unknown) =>
      fetch(`${ts.url}${path}`, {
        method,
        headers: { ...org.owner.headers, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (res) => ({ status: res.status, json: (await res.json()) as Json }));
    const sub = await rest("POST", `/events/v2beta1/subscriptions/${org.uid}`, {
      name: "group watch",
      sink: sink.url,
      eventTypes: [groupCreated],
    });
    expect(sub.status, JSON.stringify(sub.json)).toBe(200);
    const before = sink.received.length;
    const v1 = await rest("POST", `/iam/v1/groups/${org.uid}`, { name: "made-in-v1" });
    expect(v1.status, JSON.stringify(v1.json)).toBe(200);
    // A v2 group after it: once the subscription has nothing pending and has delivered at
    // least that one, every delivery the v1 group was owed has been made too.
    const v2 = await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "made-in-v2" });
    expect(v2.status, JSON.stringify(v2.json)).toBe(200);
    for (let i = 0; ; i++) {
      const { json } = await rest("GET", `/events/v2beta1/subscriptions/${sub.json.uid}`);
      const d = json.delivery as Json;
      if (Number(d.pendingCount ?? 0) === 0 && Number(d.deliveredCount ?? 0) >= 1) break;
      if (i > 600) throw new Error(`the subscription never settled: ${JSON.stringify(d)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const got = sink.received
      .slice(before)
      .map((r) => JSON.parse(r.body) as Json)
      .filter((e) => String(e.subject).startsWith(org.uid));
    expect(got.map((e) => [e.type, e.subject]).sort()).toEqual(
      [
        [groupCreated, v1.json.id],
        [groupCreated, v2.json.uid],
      ].sort(),
    );
  });

  // An access review after the fact: once a grant is revoked, its events alone say who had
  // which role where, with the names of the time (a rename later changes no event).
  it("says in a grant's and a revocation's events who had which role where, as named then", async () => {
    const org = await ts.makeOrg();
    const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const group = await iam.groups.createGroup({ parent: org.uid, group: { name: "eng" } });
    const alice = await iam.identities.createIdentity({
      parent: group.uid,
      identity: {
        name: "alice",
        method: { case: "claimMatch", value: { issuer: "https://i.test", subject: "alice" } },
      },
    });
    const role = await iam.roles.createRole({
      parent: org.uid,
      role: { name: "deployer", capabilities: ["groups.list"] },
    });
    const grant = await iam.roleBindings.createRoleBinding({
      parent: group.uid,
      roleBinding: { identityUid: alice.uid, roleUid: role.uid },
    });
    await iam.roles.updateRole({
      role: { uid: role.uid, name: "deployer-2" },
      updateMask: { paths: ["name"] },
    });
    await iam.identities.updateIdentity({
      identity: { uid: alice.uid, name: "alice-2" },
      updateMask: { paths: ["name"] },
    });
    await iam.groups.updateGroup({
      group: { uid: group.uid, name: "eng-2" },
      updateMask: { paths: ["name"] },
    });
    // Revoked through v1: the same event, the same account of it.
    const v1 = v1Clients(transportFor("grpc", ts.url, org.owner.headers));
    await v1.roleBindings.delete({ id: grant.uid });
    const made = await v1.roleBindings.createBatch({
      parent: group.uid,
      roleBindings: [{ identity: alice.uid, role: viewer.uid }],
    });

    const events = eventsOf(org.owner.headers);
    const about = async (uid: string) =>
      (await events.listEvents({ uidp: { childrenOf: uid, descendantsOf: "" } })).events.map(
        (e) => [e.type, e.data?.roleBinding],
      );
    const binding = (names: [string, string, string]) => ({
      uid: grant.uid,
      identity: { uid: alice.uid, name: names[0] },
      role: { uid: role.uid, name: names[1] },
      group: { uid: group.uid, name: names[2] },
    });
    expect(await about(grant.uid)).toEqual([
      ["dev.gatehouse.iam.role_binding.created.v1", binding(["alice", "deployer", "eng"])],
      ["dev.gatehouse.iam.role_binding.deleted.v1", binding(["alice-2", "deployer-2", "eng-2"])],
    ]);
    expect(await about(made.roleBindings[0]!.id)).toEqual([
      [
        "dev.gatehouse.iam.role_binding.created.v1",
        {
          uid: made.roleBindings[0]!.id,
          identity: { uid: alice.uid, name: "alice-2" },
          role: { uid: viewer.uid, name: "viewer" },
          group: { uid: group.uid, name: "eng-2" },
        },
      ],
    ]);
    // Other events carry no binding.
    const others = await events.listEvents({ uidp: { childrenOf: role.uid, descendantsOf: "" } });
    expect(others.events.map((e) => e.data?.roleBinding)).toEqual([undefined, undefined]);
  });
});
