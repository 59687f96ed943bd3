import { createClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { connectTransports } from "../helpers/groups-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// A change's event names the protocol its call came in with (data.protocol), as the request
// log does: gRPC, gRPC-Web, Connect (with or without its version header) and REST, whichever
// path served it (the lean paths, the router, the REST gateway).

let ts: TestServer;
let org: TestOrg;
beforeAll(async () => {
  ts = await startTestServer();
  org = await ts.makeOrg("protocols");
});
afterAll(async () => {
  await ts?.close();
});

it("records the protocol of each create's call", async () => {
  const t = connectTransports(ts.url, org.owner.headers);
  const viaRpc = async (transport: Transport, name: string) =>
    (await createClient(GroupsService, transport).createGroup({ parent: org.uid, group: { name } }))
      .uid;
  // A Connect call whose client sends no Connect-Protocol-Version (curl, a plain fetch).
  const viaPlainPost = async (name: string) => {
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/CreateGroup`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ parent: org.uid, group: { name } }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { uid: string }).uid;
  };
  const viaRest = async (name: string) => {
    const r = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name },
      org.owner.headers,
    );
    expect(r.status).toBe(200);
    return r.json.uid as string;
  };
  const made: Record<string, string> = {
    [await viaRpc(t.grpc, "grpc")]: "grpc",
    [await viaRpc(t.grpcWeb, "grpc-web")]: "grpc-web",
    [await viaRpc(t.connect, "connect")]: "connect",
    [await viaPlainPost("plain-connect")]: "connect",
    [await viaRest("rest")]: "rest",
  };
  const events = createClient(
    EventsService,
    connectTransports(ts.url, org.owner.headers).connect,
  ).listEvents({ uidp: { descendantsOf: org.uid, childrenOf: "" } });
  const got = Object.fromEntries(
    (await events).events.map((e) => [e.subject, (e.data as { protocol?: string }).protocol]),
  );
  expect(got).toEqual(made);
});
