import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// Every path checks a call's token before it reads the body, then the access interceptor
// decides the call: the token is verified and its identity looked up once, not once each
// (issue 38). Counted through what an operator sees: the store operations in /metrics.

let ts: TestServer;
let org: TestOrg;

beforeAll(async () => {
  ts = await startTestServer({ GATEHOUSE_METRICS_PORT: "0" });
  org = await ts.makeOrg();
});
afterAll(() => ts.close());

/** How many times the server has asked the store whether an identity exists. */
async function identityLookups(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${ts.server.metricsPort}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) =>
      l.startsWith('gatehouse_store_operation_duration_seconds_count{operation="identityExists"}'),
    );
  return Number(line?.slice(line.lastIndexOf(" ") + 1) ?? 0);
}

describe("a call's token is authenticated once", () => {
  const calls: [string, () => Promise<void>][] = [
    [
      "REST",
      async () => {
        const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
          headers: org.owner.headers,
        });
        expect(res.status).toBe(200);
      },
    ],
    [
      "Connect",
      async () => {
        const client = createClient(
          GroupsService,
          createConnectTransport({ baseUrl: ts.url, httpVersion: "1.1" }),
        );
        const group = await client.getGroup({ uid: org.uid }, { headers: org.owner.headers });
        expect(group.uid).toBe(org.uid);
      },
    ],
    [
      "gRPC",
      async () => {
        const client = createClient(GroupsService, createGrpcTransport({ baseUrl: ts.url }));
        const group = await client.getGroup({ uid: org.uid }, { headers: org.owner.headers });
        expect(group.uid).toBe(org.uid);
      },
    ],
  ];
  it.each(calls)("over %s", async (_, call) => {
    const before = await identityLookups();
    await call();
    expect((await identityLookups()) - before).toBe(1);
  });

  it("and a token refused before the body is still refused", async () => {
    const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
      headers: { authorization: "Bearer not-a-token" },
    });
    expect(res.status).toBe(401);
  });
});
