import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { maxGroupDepth, newChildUid } from "../../src/uid.js";
import { iamClients, protocols, transportFor } from "../helpers/iam-clients.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// CreateGroup under a parent that does not exist is NOT_FOUND naming the parent, whichever
// reads the parent (the handler did, before the write; the store's create does, in it), and
// a create refused so records nothing, even beside creates that succeed in the same commit.

describe.each(backends)("CreateGroup under a missing parent on %s", (backend: Backend) => {
  let ts: TestServer;
  let org: TestOrg;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    org = await ts.makeOrg("parents");
  });
  afterAll(async () => {
    await ts?.close();
  });

  const notFoundOf = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.NotFound);
    return err!;
  };

  it.each(protocols)("is NOT_FOUND with ResourceInfo over %s", async (p) => {
    const c = iamClients(transportFor(p, ts.url, org.owner.headers));
    const missing = newChildUid(org.uid);
    const err = await notFoundOf(c.groups.createGroup({ parent: missing, group: { name: "x" } }));
    expect(err.rawMessage).toBe(`Not found: group ${JSON.stringify(missing)}`);
    expect(err.findDetails(ResourceInfoSchema)).toEqual([
      expect.objectContaining({ resourceType: "group", resourceName: missing }),
    ]);
  });

  it("is 404 with ResourceInfo over REST", async () => {
    const missing = newChildUid(org.uid);
    const r = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/groups/${missing}`,
      { name: "x" },
      org.owner.headers,
    );
    expect(r.status).toBe(404);
    expect(r.json.message).toBe(`Not found: group ${JSON.stringify(missing)}`);
    expect((r.json.details as Json[]).map((d) => d["@type"])).toEqual([
      "type.googleapis.com/google.rpc.ErrorInfo",
      "type.googleapis.com/google.rpc.ResourceInfo",
    ]);
    expect(r.json.details[1]).toMatchObject({ resourceType: "group", resourceName: missing });
  });

  it("is NOT_FOUND, not the depth's FAILED_PRECONDITION, for a missing parent too deep", async () => {
    let deep = org.uid;
    for (let d = 0; d < maxGroupDepth; d++) deep = newChildUid(deep);
    const c = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    const err = await notFoundOf(c.groups.createGroup({ parent: deep, group: { name: "x" } }));
    expect(err.findDetails(ResourceInfoSchema)).toEqual([
      expect.objectContaining({ resourceType: "group", resourceName: deep }),
    ]);
  });

  it("records nothing for a refused create, beside creates committed with it", async () => {
    const own = await ts.makeOrg("batch");
    const c = iamClients(transportFor("grpc", ts.url, own.owner.headers));
    const missing = newChildUid(own.uid);
    // Sent together: on SQLite they arrive in one turn and share one commit.
    const answers = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        c.groups.createGroup({
          parent: i % 2 === 0 ? own.uid : missing,
          group: { name: `g${i}` },
        }),
      ),
    );
    const made = answers.flatMap((a) => (a.status === "fulfilled" ? [a.value.uid] : []));
    expect(made).toHaveLength(6);
    for (const a of answers.filter((x) => x.status === "rejected")) {
      expect(ConnectError.from((a as PromiseRejectedResult).reason).code).toBe(Code.NotFound);
    }
    const children = await c.groups.listGroups({ uidp: { childrenOf: own.uid } });
    expect(children.groups.map((g) => g.uid).sort()).toEqual([...made].sort());
    const events = createClient(EventsService, transportFor("connect", ts.url, own.owner.headers));
    const res = await events.listEvents({ uidp: { descendantsOf: own.uid, childrenOf: "" } });
    expect(res.events.map((e) => e.subject).sort()).toEqual([...made].sort());
    expect(res.events.every((e) => e.type === "dev.gatehouse.iam.group.created.v1")).toBe(true);
  });
});
