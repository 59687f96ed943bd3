import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { failure, iamClients, protocols, transportFor } from "../helpers/iam-clients.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";
import { v1Clients } from "../helpers/v1-clients.js";

// Deletes of role bindings and account associations are idempotent, as the real service's
// SDK has them (a Terraform destroy retries a Delete whose answer it lost): a second Delete
// answers OK, but only to a caller who could have deleted the thing; a stranger still gets
// PERMISSION_DENIED. Every NOT_FOUND names what is missing in google.rpc.ResourceInfo.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

describe.each(backends)("idempotent deletes and NOT_FOUND details on %s", (backend: Backend) => {
  let ts: TestServer;
  let org: TestOrg;
  let stranger: TestOrg;
  let member: string;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    org = await ts.makeOrg("deletes");
    stranger = await ts.makeOrg("stranger");
    member = (await ts.makeIdentity(org.uid)).uid;
  });
  afterAll(async () => {
    await ts?.close();
  });

  /** A fresh group of the organization with a binding and an association. */
  async function fixture(): Promise<{ group: string; binding: string }> {
    const group = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: group,
      parentUid: org.uid,
      name: group,
      description: "",
      now: 1,
    });
    const binding = newChildUid(group);
    await ts.store.createRoleBinding({
      uid: binding,
      groupUid: group,
      identityUid: member,
      roleUid: viewer.uid,
      now: 1,
    });
    await ts.store.createAccountAssociation({
      uid: group,
      name: "a",
      description: "",
      amazon: { account: "123456789012" },
      now: 1,
    });
    return { group, binding };
  }

  /** How many events of `type` organization A's owner reads. */
  async function eventsOf(type: string): Promise<bigint> {
    const events = createClient(EventsService, transportFor("connect", ts.url, org.owner.headers));
    return (await events.listEvents({ type, pageSize: 1 })).totalCount;
  }

  it.each(protocols)("a second Delete over %s answers OK and records nothing more", async (p) => {
    const c = iamClients(transportFor(p, ts.url, org.owner.headers));
    const { group, binding } = await fixture();
    const bindingEvents = await eventsOf("dev.gatehouse.iam.role_binding.deleted.v1");
    const associationEvents = await eventsOf("dev.gatehouse.iam.account_association.deleted.v1");
    for (let i = 0; i < 2; i++) {
      await c.roleBindings.deleteRoleBinding({ uid: binding });
      await c.accountAssociations.deleteAccountAssociation({ uid: group });
    }
    expect(await eventsOf("dev.gatehouse.iam.role_binding.deleted.v1")).toBe(bindingEvents + 1n);
    expect(await eventsOf("dev.gatehouse.iam.account_association.deleted.v1")).toBe(
      associationEvents + 1n,
    );
    // Gone is gone: a Get still says so.
    expect(await failure(c.roleBindings.getRoleBinding({ uid: binding }))).toMatchObject({
      code: Code.NotFound,
    });
  });

  it("a second Delete over REST answers 200", async () => {
    const { group, binding } = await fixture();
    for (const path of [
      `/iam/v2beta1/roleBindings/${binding}`,
      `/iam/v2beta1/accountAssociations/${group}`,
    ]) {
      for (let i = 0; i < 2; i++) {
        const r = await restCall(ts.url, "DELETE", path, undefined, org.owner.headers);
        expect(r.status, `${path} #${i + 1}`).toBe(200);
      }
    }
  });

  it("a second Delete over v1 answers OK", async () => {
    const v1 = v1Clients(transportFor("connect", ts.url, org.owner.headers));
    const { group, binding } = await fixture();
    for (let i = 0; i < 2; i++) {
      await v1.roleBindings.delete({ id: binding });
      await v1.accountAssociations.delete({ group });
    }
  });

  it("a stranger gets PERMISSION_DENIED alike for a binding that exists, is gone, or never was", async () => {
    const { group, binding } = await fixture();
    const owner = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    // A binding that existed and went.
    const gone = newChildUid(group);
    await ts.store.createRoleBinding({
      uid: gone,
      groupUid: group,
      identityUid: member,
      roleUid: editor.uid,
      now: 1,
    });
    await owner.roleBindings.deleteRoleBinding({ uid: gone });
    const c = iamClients(transportFor("grpc", ts.url, stranger.owner.headers));
    const answers = [];
    for (const uid of [binding, gone, newChildUid(group)]) {
      answers.push(await failure(c.roleBindings.deleteRoleBinding({ uid })));
    }
    answers.push(await failure(c.accountAssociations.deleteAccountAssociation({ uid: group })));
    answers.push(
      await failure(c.accountAssociations.deleteAccountAssociation({ uid: newChildUid(org.uid) })),
    );
    for (const a of answers) expect(a.code).toBe(Code.PermissionDenied);
    // One message for all: nothing tells which exist.
    expect(new Set(answers.slice(0, 3).map((a) => a.message)).size).toBe(1);
    expect(new Set(answers.slice(3).map((a) => a.message)).size).toBe(1);
    // And nothing was deleted.
    expect((await owner.roleBindings.getRoleBinding({ uid: binding })).uid).toBe(binding);
    expect((await owner.accountAssociations.getAccountAssociation({ uid: group })).uid).toBe(group);
  });

  it.each(protocols)("NOT_FOUND of a Get carries ResourceInfo over %s", async (p) => {
    const c = iamClients(transportFor(p, ts.url, org.owner.headers));
    const missingBinding = newChildUid(org.uid);
    const missingGroup = newChildUid(org.uid);
    const cases: [() => Promise<unknown>, string, string][] = [
      [
        () => c.roleBindings.getRoleBinding({ uid: missingBinding }),
        "role binding",
        missingBinding,
      ],
      [() => c.groups.getGroup({ uid: missingGroup }), "group", missingGroup],
      // From the store (the group a Create names), not the handler.
      [
        () =>
          c.roleBindings.createRoleBinding({
            parent: missingGroup,
            roleBinding: { identityUid: member, roleUid: viewer.uid },
          }),
        "group",
        missingGroup,
      ],
    ];
    for (const [call, type, name] of cases) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, type).toBe(Code.NotFound);
      expect(err!.findDetails(ResourceInfoSchema)).toEqual([
        expect.objectContaining({ resourceType: type, resourceName: name }),
      ]);
    }
  });

  it("NOT_FOUND of a Get carries ResourceInfo over REST, after its ErrorInfo", async () => {
    const missing = newChildUid(org.uid);
    const r = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/roleBindings/${missing}`,
      undefined,
      org.owner.headers,
    );
    expect(r.status).toBe(404);
    const details = r.json.details as Json[];
    expect(details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
    expect(details[0].reason).toBe("NOT_FOUND");
    expect(details[1]).toEqual({
      "@type": "type.googleapis.com/google.rpc.ResourceInfo",
      resourceType: "role binding",
      resourceName: missing,
    });
  });
});
