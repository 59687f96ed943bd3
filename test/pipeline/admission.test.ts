import {
  Code,
  ConnectError,
  createClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import type { AdmissionRequest } from "../../src/pipeline/admission.js";
import { createServer, type Server } from "../../src/server.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// Call admission is one stage that every entry point runs before it reads a body: a check
// given to the server (a rate limit, say) refuses a call on REST, Connect (JSON, binary, the
// GET form), gRPC and gRPC-Web, on the lean paths and on connect-node's router alike, with the
// check's own error, and the handler never runs. The token check comes first: a call without
// a valid token is refused as it always was, and the checks never see it.

const getGroup = "gatehouse.iam.v2beta1.GroupsService/GetGroup";
const slowDown = () => new ConnectError("slow down", Code.ResourceExhausted);

let ts: TestServer;
let router: Server;
let routerUrl: string;
let org: TestOrg;
const seen: AdmissionRequest[] = [];
const handled: string[] = [];
// Refuses GetGroup, for whoever has a token; lets everything else through.
const check = (r: AdmissionRequest) => {
  seen.push(r);
  return r.rpc === getGroup ? slowDown() : undefined;
};
const spy: Interceptor = (next) => (req) => {
  handled.push(req.method.name);
  return next(req);
};

beforeAll(async () => {
  ts = await startTestServer({}, { interceptors: [spy] });
  org = await ts.makeOrg("admitted");
  // The same server with the lean paths off: everything through connect-node's router.
  router = await createServer({
    config: { ...ts.config, port: 0, leanPaths: false },
    store: ts.store,
    interceptors: [spy],
    admissionChecks: [check],
  });
  routerUrl = `http://127.0.0.1:${(await router.listen()).port}`;
}, 30_000);
afterAll(async () => {
  await router?.close();
  await ts?.close();
});

describe("a check given to admission", () => {
  let lean: Server;
  let leanUrl: string;
  beforeAll(async () => {
    lean = await createServer({
      config: { ...ts.config, port: 0 },
      store: ts.store,
      interceptors: [spy],
      admissionChecks: [check],
    });
    leanUrl = `http://127.0.0.1:${(await lean.listen()).port}`;
  });
  afterAll(() => lean?.close());

  const transports: [string, (url: string) => Transport][] = [
    ["Connect JSON", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
    [
      "Connect binary",
      (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    ],
    [
      "Connect GET",
      (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useHttpGet: true }),
    ],
    ["gRPC", (baseUrl) => createGrpcTransport({ baseUrl })],
    ["gRPC-Web", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
  ];

  describe.each([
    ["the lean paths", () => leanUrl],
    ["the router", () => routerUrl],
  ])("on %s", (_name, url) => {
    it.each(transports)(
      "refuses %s with the check's error, before the handler",
      async (_t, make) => {
        const client = createClient(GroupsService, make(url()));
        const before = { seen: seen.length, handled: handled.length };
        const err = await client
          .getGroup({ uid: org.uid }, { headers: org.owner.headers })
          .then(() => undefined, ConnectError.from);
        expect(err?.code).toBe(Code.ResourceExhausted);
        expect(err?.rawMessage).toBe("slow down");
        expect(seen.slice(before.seen).map((r) => r.rpc)).toEqual([getGroup]);
        expect(handled.slice(before.handled)).toEqual([]);
        // What the check is told: the call, its caller's token and address.
        const r = seen.at(-1)!;
        expect(r.authorization).toBe(org.owner.headers.authorization);
        expect(r.address).toMatch(/127\.0\.0\.1/);
        expect(r.requestId).not.toBe("");
      },
    );

    it.each(transports)("lets %s through when it passes", async (_t, make) => {
      const client = createClient(GroupsService, make(url()));
      const res = await client.listGroups(
        { uidp: { descendantsOf: org.uid } },
        { headers: org.owner.headers },
      );
      expect(res.totalCount).toBeGreaterThanOrEqual(0n);
    });

    it("checks the token first: a call without one is UNAUTHENTICATED, unseen by the check", async () => {
      const client = createClient(GroupsService, transports[0]![1](url()));
      const before = seen.length;
      const err = await client.getGroup({ uid: org.uid }).then(() => undefined, ConnectError.from);
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(seen.length).toBe(before);
    });
  });

  it("refuses REST too, with the check's error as API.md's body", async () => {
    const before = { seen: seen.length, handled: handled.length };
    const res = await fetch(`${leanUrl}/iam/v2beta1/groups/${org.uid}`, {
      headers: org.owner.headers,
    });
    const body = (await res.json()) as { code?: number; message?: string };
    expect(res.status).toBe(429);
    expect(body.code).toBe(Code.ResourceExhausted);
    expect(body.message).toContain("slow down");
    expect(seen.slice(before.seen).map((r) => r.rpc)).toEqual([getGroup]);
    expect(handled.slice(before.handled)).toEqual([]);
  });
});
