import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v1/groups_pb.js";
import { compileHttpRules } from "../../src/rest/http-rules.js";
import { withHeaders } from "../helpers/groups-clients.js";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus-text.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";
import { v1Services } from "../helpers/v1-clients.js";

// v1's deprecation window (issue 42 item 8, docs/v1-migration.md "Deprecation"): every v1
// answer, on every route and RPC, refused or not, carries Deprecation (RFC 9745) and Link to
// the migration guide, and Sunset (RFC 8594) once the operator set a date; v2 answers do
// not. The metrics count v1 calls per method.

const sunset = "2027-06-30";
const deprecatedAt = `@${Date.parse("2026-11-27") / 1000}`;

/** Every v1 REST route, as a concrete path (each variable a made-up uid). */
const routes = compileHttpRules(v1Services).map((r) => {
  const path = r.template.segments.map((s) => (s.kind === "literal" ? s.value : "0a1b")).join("/");
  return {
    rpc: r.rpc,
    method: r.httpMethod,
    path: `/${path}${r.template.verb ? `:${r.template.verb}` : ""}`,
  };
});

describe("with a sunset date", () => {
  let org: TestOrg;
  const ts = useTestServer({ GATEHOUSE_V1_SUNSET: sunset, GATEHOUSE_METRICS_PORT: "0" });
  beforeAll(async () => {
    org = await ts.makeOrg("v1-window");
  });
  const guide = () => `${ts.url}/docs/v1-migration.md`;
  const expected = () => ({
    deprecation: deprecatedAt,
    sunset: "Wed, 30 Jun 2027 00:00:00 GMT",
    link: `<${guide()}>; rel="deprecation"; type="text/markdown", <${guide()}>; rel="sunset"; type="text/markdown"`,
  });
  const window = (h: Headers) => ({
    deprecation: h.get("deprecation"),
    sunset: h.get("sunset"),
    link: h.get("link"),
  });

  it("has routes of every v1 service to check", () => {
    expect(new Set(routes.map((r) => r.rpc.split("/")[0])).size).toBe(v1Services.length);
  });

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r]))(
    "REST %s carries the window, refused (no token) or not",
    async (_name, route) => {
      const res = await fetch(ts.url + route.path, {
        method: route.method,
        ...(["POST", "PUT", "PATCH"].includes(route.method)
          ? { body: "{}", headers: { "content-type": "application/json" } }
          : {}),
      });
      await res.arrayBuffer();
      expect(res.status).toBe(401);
      expect(window(res.headers)).toEqual(expected());
    },
  );

  it("REST: an answered v1 call carries it; a v2 call does not", async () => {
    const v1 = await fetch(`${ts.url}/iam/v1/groups`, { headers: org.owner.headers });
    expect(v1.status).toBe(200);
    expect(window(v1.headers)).toEqual(expected());
    const v2 = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
      headers: org.owner.headers,
    });
    expect(v2.status).toBe(200);
    expect(window(v2.headers)).toEqual({ deprecation: null, sunset: null, link: null });
  });

  it.each(["connect", "grpc"] as const)(
    "%s: v1 answers and refusals carry it as response metadata",
    async (protocol) => {
      const make = (headers: Record<string, string>) =>
        protocol === "connect"
          ? createConnectTransport({
              baseUrl: ts.url,
              httpVersion: "1.1",
              interceptors: [withHeaders(headers)],
            })
          : createGrpcTransport({ baseUrl: ts.url, interceptors: [withHeaders(headers)] });
      let seen: Headers | undefined;
      await createClient(GroupsService, make(org.owner.headers)).list(
        {},
        {
          onHeader: (h) => {
            seen = h;
          },
        },
      );
      expect(window(seen!)).toEqual(expected());
      const refused = ConnectError.from(
        await createClient(GroupsService, make({}))
          .list({})
          .catch((e) => e),
      );
      expect(refused.code).toBe(Code.Unauthenticated);
      expect(window(refused.metadata)).toEqual(expected());
    },
  );

  it("serves the migration guide the Link points to", async () => {
    const res = await fetch(guide());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(await res.text()).toMatch(/^# The v1 API, and moving to v2beta1/);
  });

  it("counts v1 calls per method, whatever the protocol and outcome", async () => {
    const scrape = async () =>
      parsePrometheusText(
        await (await fetch(`http://127.0.0.1:${ts.server.metricsPort}/metrics`)).text(),
      );
    const labels = { service: GroupsService.typeName, method: "List" };
    const before = sampleValue(await scrape(), "gatehouse_v1_calls_total", labels);
    await fetch(`${ts.url}/iam/v1/groups`, { headers: org.owner.headers });
    await fetch(`${ts.url}/iam/v1/groups`);
    await createClient(
      GroupsService,
      createGrpcTransport({ baseUrl: ts.url, interceptors: [withHeaders(org.owner.headers)] }),
    ).list({});
    await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, { headers: org.owner.headers });
    const after = await scrape();
    expect(sampleValue(after, "gatehouse_v1_calls_total", labels) - before).toBe(3);
    // Every v1 method has its series, made at start (0 until called).
    const series = after.samples.filter((x) => x.name === "gatehouse_v1_calls_total");
    expect(series.length).toBe(v1Services.reduce((n, svc) => n + svc.methods.length, 0));
  });
});

describe("without a sunset date", () => {
  const ts = useTestServer({ GATEHOUSE_V1_MIGRATION_URL: "https://docs.example/v1" });
  it("carries Deprecation and Link to the operator's guide, and no Sunset", async () => {
    const res = await fetch(`${ts.url}/iam/v1/groups`);
    expect(res.status).toBe(401);
    expect(res.headers.get("deprecation")).toBe(deprecatedAt);
    expect(res.headers.get("sunset")).toBeNull();
    expect(res.headers.get("link")).toBe(
      '<https://docs.example/v1>; rel="deprecation"; type="text/markdown"',
    );
  });
});
