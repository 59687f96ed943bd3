import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import {
  failure,
  type IamClients,
  iamClients,
  protocols,
  transportFor,
} from "../helpers/iam-clients.js";
import { eventKey, inMadeOrder } from "../helpers/list-order.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  type TestCaller,
  type TestOrg,
  useTestServer,
} from "../helpers/test-server.js";

// BatchCreateRoleBindings (AIP-233): every binding of a batch, or none, on every protocol and
// both backends, with one `role_binding.created` event per binding made.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
const created = "dev.gatehouse.iam.role_binding.created.v1";

describe.each(backends)("BatchCreateRoleBindings on %s", (backend: Backend) => {
  const ts = useTestServer({}, { backend });
  let org: TestOrg;
  let group: string;
  let people: TestCaller[];
  beforeAll(async () => {
    org = await ts.makeOrg(`batch-${backend}`);
    const c = iamClients(transportFor("connect", ts.url, org.owner.headers));
    group = (await c.groups.createGroup({ parent: org.uid, group: { name: "team" } })).uid;
    people = [];
    for (let i = 0; i < 6; i++) people.push(await ts.makeIdentity(group));
  });

  const eventsAt = async (requestId?: string) => {
    const events = createClient(EventsService, transportFor("connect", ts.url, org.owner.headers));
    const res = await events.listEvents({
      uidp: { descendantsOf: group, childrenOf: "" },
      pageSize: 200,
    });
    return res.events.filter((e) => requestId === undefined || e.data?.requestId === requestId);
  };
  const bindingsAt = async (c: IamClients) =>
    (await c.roleBindings.listRoleBindings({ group, pageSize: 200 })).roleBindings;

  describe.each(protocols)("over %s", (protocol) => {
    let c: IamClients;
    beforeAll(() => {
      c = iamClients(transportFor(protocol, ts.url, org.owner.headers));
    });

    it("creates every binding in order, each with its own event of the created type", async () => {
      const [a, b] = protocol === "grpc" ? [people[0]!, people[1]!] : [people[2]!, people[3]!];
      const res = await c.roleBindings.batchCreateRoleBindings({
        parent: group,
        requests: [
          { roleBinding: { identityUid: a.uid, roleUid: viewer.uid } },
          { parent: group, roleBinding: { identityUid: b.uid, roleUid: editor.uid } },
        ],
      });
      expect(res.roleBindings.map((x) => [x.identity?.uid, x.role?.name, x.group?.uid])).toEqual([
        [a.uid, "viewer", group],
        [b.uid, "editor", group],
      ]);
      for (const x of res.roleBindings) {
        expect(await c.roleBindings.getRoleBinding({ uid: x.uid })).toEqual(x);
      }
      const events = (await eventsAt()).filter((e) =>
        res.roleBindings.some((x) => x.uid === e.subject),
      );
      // One event a binding; one transaction's events are of one millisecond, listed by uid.
      expect(events.map(eventKey)).toEqual(
        inMadeOrder(
          events,
          res.roleBindings.map((x) => eventKey({ type: created, subject: x.uid })),
          eventKey,
        ),
      );
      // One call: one request id for both.
      expect(events[0]!.data?.requestId).toBe(events[1]!.data?.requestId);
      expect(events[0]!.source).toBe("/gatehouse.iam.v2beta1.RoleBindingsService");
    });

    it("makes nothing when one binding is refused, and names the one that was", async () => {
      const before = await bindingsAt(c);
      const eventsBefore = (await eventsAt()).length;
      const x = people[4]!;
      const err = await failure(
        c.roleBindings.batchCreateRoleBindings({
          parent: group,
          requests: [
            { roleBinding: { identityUid: x.uid, roleUid: viewer.uid } },
            { roleBinding: { identityUid: x.uid, roleUid: `${org.uid}/ffffffffffffffff` } },
          ],
        }),
      );
      expect(err).toMatchObject({ code: 3, fields: ["requests[1].roleBinding.roleUid"] });
      // The same binding twice: the second is ALREADY_EXISTS, and the first is undone too.
      const dup = await failure(
        c.roleBindings.batchCreateRoleBindings({
          parent: group,
          requests: [
            { roleBinding: { identityUid: x.uid, roleUid: editor.uid } },
            { roleBinding: { identityUid: x.uid, roleUid: editor.uid } },
          ],
        }),
      );
      expect(dup.code).toBe(6);
      expect(await bindingsAt(c)).toEqual(before);
      expect((await eventsAt()).length).toBe(eventsBefore);
    });

    it("refuses a batch that is empty, too large, or names another parent", async () => {
      const one = { roleBinding: { identityUid: people[5]!.uid, roleUid: viewer.uid } };
      const empty = await failure(c.roleBindings.batchCreateRoleBindings({ parent: group }));
      expect(empty).toMatchObject({ code: 3, fields: ["requests"] });
      const large = await failure(
        c.roleBindings.batchCreateRoleBindings({
          parent: group,
          requests: Array.from({ length: 101 }, () => one),
        }),
      );
      expect(large).toMatchObject({ code: 3, fields: ["requests"] });
      const elsewhere = await failure(
        c.roleBindings.batchCreateRoleBindings({
          parent: group,
          requests: [{ ...one, parent: org.uid }],
        }),
      );
      expect(elsewhere).toMatchObject({ code: 3, fields: ["requests[0].parent"] });
    });
  });

  it("is served over REST at roleBindings/<group>:batchCreate", async () => {
    const x = people[5]!;
    const path = `/iam/v2beta1/roleBindings/${group}:batchCreate`;
    const body = { requests: [{ roleBinding: { identityUid: x.uid, roleUid: viewer.uid } }] };
    const ok = await restCall(ts.url, "POST", path, body, org.owner.headers);
    expect(ok.status).toBe(200);
    expect(ok.json.roleBindings).toHaveLength(1);
    expect(ok.json.roleBindings[0]).toMatchObject({
      identity: { uid: x.uid },
      role: { uid: viewer.uid },
      group: { uid: group },
    });
    const bad = await restCall(
      ts.url,
      "POST",
      path,
      { requests: [{ roleBinding: { identityUid: "nope", roleUid: viewer.uid } }] },
      org.owner.headers,
    );
    expect(bad.status).toBe(400);
    expect(badRequestFields(bad.json)).toEqual(["requests[0].roleBinding.identityUid"]);
  });

  it("grants nothing the caller does not hold, and nothing in another organization", async () => {
    const c = iamClients(transportFor("connect", ts.url, org.owner.headers));
    // A viewer with role_bindings.create (a custom role) may grant viewer, not owner.
    const granter = await ts.makeIdentity(group);
    const binder = await c.roles.createRole({
      parent: org.uid,
      role: { name: "binder", capabilities: ["role_bindings.create", ...viewer.capabilities] },
    });
    await c.roleBindings.createRoleBinding({
      parent: group,
      roleBinding: { identityUid: granter.uid, roleUid: binder.uid },
    });
    const asGranter = iamClients(transportFor("connect", ts.url, granter.headers));
    const target = await ts.makeIdentity(group);
    const before = await bindingsAt(c);
    const up = await failure(
      asGranter.roleBindings.batchCreateRoleBindings({
        parent: group,
        requests: [
          { roleBinding: { identityUid: target.uid, roleUid: viewer.uid } },
          { roleBinding: { identityUid: target.uid, roleUid: ownerRole.uid } },
        ],
      }),
    );
    expect(up.code).toBe(7);
    expect(await bindingsAt(c)).toEqual(before);

    const stranger = await ts.makeOrg(`batch-stranger-${backend}`);
    const asStranger = iamClients(transportFor("grpc", ts.url, stranger.owner.headers));
    const foreign = await failure(
      asStranger.roleBindings.batchCreateRoleBindings({
        parent: group,
        requests: [{ roleBinding: { identityUid: stranger.owner.uid, roleUid: viewer.uid } }],
      }),
    );
    expect(foreign.code).toBe(7);
    expect(await bindingsAt(c)).toEqual(before);
  });
});
