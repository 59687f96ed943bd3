import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { apiServices } from "../../src/service-table.js";
import {
  connectGroups,
  connectTransports,
  type GroupsApi,
  restGroups,
  withHeaders,
} from "../helpers/groups-clients.js";
import { type Exposition, parsePrometheusText, sampleValue } from "../helpers/prometheus-text.js";
import { startTestServer, useTestServer } from "../helpers/test-server.js";

// GATEHOUSE_METRICS_PORT: /metrics on its own port, counting every protocol's calls.
let metricsUrl: string;
let org: string;
let headers: Record<string, string>;
const registryService = "127.0.0.1:5999";
const viewerRoleUid = builtinRoles.find((r) => r.name === "viewer")!.uid;
const closers: (() => void)[] = [];

const ts = useTestServer({
  GATEHOUSE_METRICS_PORT: "0",
  GATEHOUSE_REGISTRY_AUDIENCE: registryService,
});
beforeAll(async () => {
  metricsUrl = `http://127.0.0.1:${ts.server.metricsPort}/metrics`;
  const made = await ts.makeOrg();
  org = made.uid;
  headers = made.owner.headers;
});

afterAll(async () => {
  for (const c of closers) c();
});

async function scrape(): Promise<Exposition> {
  const res = await fetch(metricsUrl);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

const getGroupOk = (protocol: string) => ({
  service: GroupsService.typeName,
  method: "GetGroup",
  protocol,
  code: "OK",
});

describe("the metrics port", () => {
  it("serves /metrics there, and nothing of it on the API port", async () => {
    const e = await scrape();
    expect(e.types.get("gatehouse_rpc_requests_total")).toBe("counter");
    expect(e.types.get("gatehouse_rpc_duration_seconds")).toBe("histogram");
    // prom-client's process and event-loop metrics.
    expect(e.types.get("process_cpu_seconds_total")).toBe("counter");
    expect(e.types.get("nodejs_eventloop_lag_seconds")).toBe("gauge");
    const api = await fetch(`${ts.url}/metrics`);
    expect(api.status).toBe(404);
    expect(await api.text()).not.toContain("gatehouse_rpc");
    const other = await fetch(`http://127.0.0.1:${ts.server.metricsPort}/other`);
    expect(other.status).toBe(404);
  });

  it("is off without GATEHOUSE_METRICS_PORT", async () => {
    const off = await startTestServer();
    try {
      expect(off.server.metricsPort).toBeUndefined();
      expect(off.server.metrics.registry).toBeUndefined();
    } finally {
      await off.close();
    }
  });
});

describe("RPC counters", () => {
  const clients: Record<string, () => GroupsApi> = {
    rest: () => restGroups(ts.url, headers),
    connect: () => connectGroups(connectTransports(ts.url, headers).connect),
    "grpc-web": () => connectGroups(connectTransports(ts.url, headers).grpcWeb),
    grpc: () => connectGroups(connectTransports(ts.url, headers).grpc),
  };

  it.each(Object.keys(clients))("counts GetGroup over %s, with its latency", async (protocol) => {
    const before = await scrape();
    const api = clients[protocol]!();
    await api.get(org);
    await api.get(org);
    const after = await scrape();
    const labels = getGroupOk(protocol);
    expect(sampleValue(after, "gatehouse_rpc_requests_total", labels)).toBe(
      sampleValue(before, "gatehouse_rpc_requests_total", labels) + 2,
    );
    expect(sampleValue(after, "gatehouse_rpc_duration_seconds_count", labels)).toBe(
      sampleValue(before, "gatehouse_rpc_duration_seconds_count", labels) + 2,
    );
    expect(sampleValue(after, "gatehouse_rpc_duration_seconds_sum", labels)).toBeGreaterThan(
      sampleValue(before, "gatehouse_rpc_duration_seconds_sum", labels),
    );
  });

  it("counts the Connect router's calls (GET) and errors by code", async () => {
    const transport = createConnectTransport({
      baseUrl: ts.url,
      httpVersion: "1.1",
      useHttpGet: true,
      interceptors: [withHeaders(headers)],
    });
    const client = createClient(GroupsService, transport);
    const before = await scrape();
    await client.getGroup({ uid: org });
    await expect(client.getGroup({ uid: `${org}/0123456789abcdef` })).rejects.toThrow();
    const after = await scrape();
    const ok = getGroupOk("connect");
    const notFound = { ...ok, code: "PERMISSION_DENIED" };
    expect(sampleValue(after, "gatehouse_rpc_requests_total", ok)).toBe(
      sampleValue(before, "gatehouse_rpc_requests_total", ok) + 1,
    );
    // A group that does not exist is not the caller's to know of: denied, not NOT_FOUND.
    const deniedOrMissing =
      sampleValue(after, "gatehouse_rpc_requests_total", notFound) +
      sampleValue(after, "gatehouse_rpc_requests_total", { ...ok, code: "NOT_FOUND" }) -
      sampleValue(before, "gatehouse_rpc_requests_total", notFound) -
      sampleValue(before, "gatehouse_rpc_requests_total", { ...ok, code: "NOT_FOUND" });
    expect(deniedOrMissing).toBe(1);
  });

  it("counts authorization decisions, store latency and access-cache lookups", async () => {
    const before = await scrape();
    const api = restGroups(ts.url, headers);
    await api.get(org);
    const stranger = await ts.makeOrg();
    await expect(restGroups(ts.url, stranger.owner.headers).get(org)).rejects.toThrow();
    await expect(restGroups(ts.url, { authorization: "Bearer nope" }).get(org)).rejects.toThrow();
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(moved("gatehouse_authorization_decisions_total", { outcome: "allowed" })).toBe(1);
    expect(moved("gatehouse_authorization_decisions_total", { outcome: "denied" })).toBe(1);
    expect(moved("gatehouse_authorization_decisions_total", { outcome: "unauthenticated" })).toBe(
      1,
    );
    expect(
      moved("gatehouse_store_operation_duration_seconds_count", { operation: "getGroup" }),
    ).toBe(1);
    expect(
      moved("gatehouse_access_cache_lookups_total", { result: "hit" }) +
        moved("gatehouse_access_cache_lookups_total", { result: "miss" }),
    ).toBeGreaterThan(0);
  });
});

describe("store operations in a transaction", () => {
  it("are timed as the others, and the transaction with them", async () => {
    const workload = await ts.makeIdentity(org);
    const before = await scrape();
    const res = await fetch(`${ts.url}/iam/v2beta1/roleBindings/${org}`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ identityUid: workload.uid, roleUid: viewerRoleUid }),
    });
    expect(res.status).toBe(200);
    const after = await scrape();
    const moved = (operation: string) =>
      sampleValue(after, "gatehouse_store_operation_duration_seconds_count", { operation }) -
      sampleValue(before, "gatehouse_store_operation_duration_seconds_count", { operation });
    // CreateRoleBinding checks and grants in one transaction: its reads and its write count.
    expect(moved("atomically")).toBe(1);
    expect(moved("getIdentity")).toBeGreaterThanOrEqual(1);
    expect(moved("createRoleBinding")).toBe(1);
  });
});

describe("token requests", () => {
  it("count STS exchanges by outcome", async () => {
    const before = await scrape();
    // No OIDC token as the bearer: refused, over REST and Connect alike.
    const rest = await fetch(`${ts.url}/sts/exchange`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ aud: ts.config.baseUrl }),
    });
    expect(rest.status).toBe(401);
    const connect = await fetch(`${ts.url}/gatehouse.sts.v1.SecurityTokenService/Exchange`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer not-a-jwt" },
      body: JSON.stringify({ aud: ts.config.baseUrl }),
    });
    expect(connect.ok).toBe(false);
    const after = await scrape();
    const refused = { kind: "sts_exchange", outcome: "refused" };
    expect(
      sampleValue(after, "gatehouse_token_requests_total", refused) -
        sampleValue(before, "gatehouse_token_requests_total", refused),
    ).toBe(2);
  });
});

describe("registry token requests", () => {
  it("count by outcome", async () => {
    const before = await scrape();
    const url = `${ts.config.authUrl}/registry/token?service=${registryService}`;
    // Anonymous, no scope: a token granting nothing.
    expect((await fetch(url)).status).toBe(200);
    // A Gatehouse token that is not one: refused.
    const basic = `Basic ${Buffer.from("someone:not-a-token").toString("base64")}`;
    expect((await fetch(url, { headers: { authorization: basic } })).status).toBe(401);
    const after = await scrape();
    const moved = (outcome: string) =>
      sampleValue(after, "gatehouse_token_requests_total", { kind: "registry_token", outcome }) -
      sampleValue(before, "gatehouse_token_requests_total", { kind: "registry_token", outcome });
    expect(moved("issued")).toBe(1);
    expect(moved("refused")).toBe(1);
  });
});

describe("label sets", () => {
  const served = new Set(
    apiServices.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)),
  );
  const seriesOf = (e: Exposition) =>
    e.samples.filter((s) => s.name === "gatehouse_rpc_requests_total");

  it("stay bounded under random paths, methods and protocols", async () => {
    const before = seriesOf(await scrape()).length;
    const contentTypes = [
      "application/json",
      "application/proto",
      "application/grpc-web+proto",
      "application/connect+json",
      "text/plain",
    ];
    const service = fc.oneof(
      fc.constantFrom(...apiServices.map((s) => s.typeName)),
      fc.stringMatching(/^[a-z.]{1,20}$/),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
        fc.oneof(
          fc.tuple(service, fc.stringMatching(/^[A-Za-z]{1,12}$/)).map(([s, m]) => `/${s}/${m}`),
          fc.webPath().map((p) => (p.startsWith("/") ? p : `/${p}`)),
          fc.uuid().map((u) => `/iam/v2beta1/groups/${org}/${u}`),
        ),
        fc.constantFrom(...contentTypes),
        async (method, path, type) => {
          const res = await fetch(`${ts.url}${path}`, {
            method,
            headers: { ...headers, "content-type": type, "connect-protocol-version": "1" },
            ...(method === "GET" ? {} : { body: "{}" }),
          }).catch(() => undefined);
          await res?.arrayBuffer();
        },
      ),
      { numRuns: 150 },
    );
    const series = seriesOf(await scrape());
    // Random paths add at most the one "unknown" method per protocol and code.
    expect(series.length - before).toBeLessThanOrEqual(4 * 18);
    for (const s of series) {
      const rpc = `${s.labels.service}/${s.labels.method}`;
      if (rpc !== "unknown/unknown") expect(served.has(rpc) || rpc.startsWith("grpc.")).toBe(true);
      expect(s.labels.code).toMatch(/^[A-Z_]+$/);
      expect(["grpc", "grpc-web", "connect", "rest"]).toContain(s.labels.protocol);
    }
  });
});
