import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import fastifyCors from "@fastify/cors";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  GroupSchema,
  GroupsService,
  ListGroupsResponseSchema,
} from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { type CallInfo, kCallInfo } from "../../src/call-info.js";
import { invalidField, toApiError } from "../../src/errors.js";
import { createErrorInterceptor } from "../../src/interceptors.js";
import { createUnaryPipeline } from "../../src/pipeline/unary-invocation.js";
import { toRestErrorBody } from "../../src/rest/error-body.js";
import { createFrameworkErrorHandler, noRouteError } from "../../src/rest/error-reply.js";
import { restGateway } from "../../src/rest/gateway.js";
import { registerServices } from "../../src/service-impls.js";
import { registration } from "../../src/service-registration.js";

const domain = "gatehouse.test";
const kTenant = createContextKey("none", { description: "test tenant" });

/** What the stub handlers were called with. */
interface Seen {
  method: string;
  req: Record<string, unknown>;
  ctx: HandlerContext;
}

let seen: Seen[] = [];
let logged: { msg: string; fields: Record<string, unknown> }[] = [];
let lines: { url: string; rpc?: string | undefined; code?: number | undefined; status: number }[] =
  [];

const group = (uid: string, name = "n") =>
  create(GroupSchema, {
    uid,
    name,
    createTime: timestampFromMs(Date.UTC(2026, 10, 22, 7, 30, 0, 123)),
  });

const failures: Record<string, () => Error> = {
  boom: () => new Error("secret cause: the database password is hunter2"),
  invalid: () => invalidField("uid", "not a uid"),
  unauthenticated: () => new ConnectError("Unauthenticated: token expired", Code.Unauthenticated),
  denied: () => new ConnectError("Permission denied: no", Code.PermissionDenied),
  missing: () => new ConnectError("Not found: group", Code.NotFound),
  exists: () => new ConnectError("Already exists: group", Code.AlreadyExists),
  aborted: () => new ConnectError("Aborted: conflict", Code.Aborted),
  unimplemented: () => new ConnectError("Unimplemented: later", Code.Unimplemented),
  precondition: () => new ConnectError("Precondition failed: not empty", Code.FailedPrecondition),
  busy: () => new ConnectError("Unavailable: busy", Code.Unavailable, { "retry-after": "5" }),
};

const stub: ServiceImpl<typeof GroupsService> = {
  async listGroups(req, ctx) {
    seen.push({ method: "listGroups", req: { ...req }, ctx });
    return create(ListGroupsResponseSchema, {
      groups: [group("r/a"), group("r/b")],
      totalCount: 3n,
      skipped: req.skip,
      ...(req.pageToken ? { nextPageToken: "next" } : {}),
    });
  },
  async getGroup(req, ctx) {
    seen.push({ method: "getGroup", req: { ...req }, ctx });
    const fail = failures[req.uid];
    if (fail) throw fail();
    if (req.uid === "slow") {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      throw ctx.signal.reason;
    }
    ctx.responseHeader.set("x-handler", "yes");
    ctx.responseTrailer.set("x-trailer", "also");
    return group(req.uid);
  },
  async createGroup(req, ctx) {
    seen.push({ method: "createGroup", req: { ...req }, ctx });
    return group(req.parent ? `${req.parent}/c` : "root", req.group?.name);
  },
  async updateGroup(req, ctx) {
    seen.push({ method: "updateGroup", req: { ...req }, ctx });
    return group(req.group?.uid ?? "", req.group?.name);
  },
  async deleteGroup(req, ctx) {
    seen.push({ method: "deleteGroup", req: { ...req }, ctx });
    return {};
  },
};

const rejecting: Interceptor = (next) => async (req) => {
  if (req.header.get("x-reject")) {
    throw new ConnectError("Unauthenticated: rejected by the interceptor", Code.Unauthenticated);
  }
  return next(req);
};
const tenantEcho: Interceptor = (next) => async (req) => {
  const res = await next(req);
  res.header.set("x-tenant-seen", req.contextValues.get(kTenant));
  return res;
};

async function buildApp(
  opts: { cors?: boolean } = {},
): Promise<{ app: FastifyInstance; url: string }> {
  const log = (msg: string, fields: Record<string, unknown>) => logged.push({ msg, fields });
  const callInfos = new WeakMap<FastifyRequest, CallInfo>();
  const contextValues = (req: FastifyRequest) => {
    const info: CallInfo = {};
    callInfos.set(req, info);
    const tenant = req.headers["x-tenant"];
    return createContextValues()
      .set(kCallInfo, info)
      .set(kTenant, typeof tenant === "string" ? tenant : "none");
  };
  const interceptors = [createErrorInterceptor(domain, log), rejecting, tenantEcho];
  const services = [registration(GroupsService, stub)];

  const app = Fastify({
    bodyLimit: 1024 * 1024,
    frameworkErrors: createFrameworkErrorHandler(domain),
    // fetch keeps connections open; the test server need not wait for them.
    forceCloseConnections: true,
  });
  if (opts.cors) await app.register(fastifyCors, { origin: "*" });
  await app.register(fastifyConnectPlugin, {
    interceptors,
    contextValues,
    routes: (r) => registerServices(r, services),
  });
  const pipeline = createUnaryPipeline({
    interceptors,
    domain,
    log,
    shutdownSignal: new AbortController().signal,
  });
  await app.register(restGateway, { services, pipeline, contextValues, domain, log });
  // Registered after the gateway: an exact route still wins over its catch-all.
  app.get("/healthz", async () => ({ status: "SERVING" }));
  app.addHook("onResponse", async (req, reply) => {
    const info = callInfos.get(req);
    lines.push({ url: req.url, rpc: info?.rpc, code: info?.code, status: reply.statusCode });
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}` };
}

let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  ({ app, url: base } = await buildApp());
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  seen = [];
  logged = [];
  lines = [];
});

type Json = Record<string, unknown>;

async function call(
  method: string,
  path: string,
  init: { json?: unknown; body?: string | Uint8Array; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | Uint8Array | undefined = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(base + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { res, status: res.status, text, json: (text ? JSON.parse(text) : undefined) as Json };
}

/** Check an API.md error body: code, ErrorInfo first with the domain, and the HTTP status. */
function expectApiError(r: Awaited<ReturnType<typeof call>>, status: number, code: number) {
  expect(r.status).toBe(status);
  expect(r.res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(r.json.code).toBe(code);
  expect(typeof r.json.message).toBe("string");
  const details = r.json.details as Json[];
  expect(details[0]).toMatchObject({
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    domain,
  });
  return details;
}

const fieldsOf = (details: Json[]) =>
  details
    .filter((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest")
    .flatMap((d) => (d.fieldViolations as { field: string }[]).map((v) => v.field));

describe("successful calls", () => {
  it("answers GET with protojson: camelCase, defaults present, RFC 3339 times", async () => {
    const r = await call("GET", "/iam/v2beta1/groups/r/c");
    expect(r.status).toBe(200);
    expect(r.res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(r.json).toEqual({
      uid: "r/c",
      name: "n",
      description: "",
      resourceLimits: {},
      verified: false,
      createTime: "2026-11-22T07:30:00.123Z",
    });
    expect(seen).toMatchObject([{ method: "getGroup", req: { uid: "r/c" } }]);
  });

  it("gives the handler a REST context and returns the headers and trailers it set", async () => {
    const r = await call("GET", "/iam/v2beta1/groups/r?x=", {
      headers: { "x-tenant": "acme", authorization: "Bearer t" },
    }).catch((e) => e);
    // ?x= is an unknown query parameter: nothing reaches the handler.
    expect(r.status).toBe(400);
    const ok = await call("GET", "/iam/v2beta1/groups/r", {
      headers: { "x-tenant": "acme", authorization: "Bearer t" },
    });
    expect(ok.res.headers.get("x-handler")).toBe("yes");
    expect(ok.res.headers.get("x-trailer")).toBe("also");
    expect(ok.res.headers.get("x-tenant-seen")).toBe("acme");
    const ctx = seen[0]!.ctx;
    expect(ctx.protocolName).toBe("rest");
    expect(ctx.requestMethod).toBe("GET");
    expect(ctx.requestHeader.get("authorization")).toBe("Bearer t");
    expect(ctx.values.get(kTenant)).toBe("acme");
    expect(ctx.url).toBe(`${base}/iam/v2beta1/groups/r`);
    expect(ctx.service).toBe(GroupsService);
  });

  it("keeps slashes in uids and percent-decodes segments", async () => {
    await call("GET", "/iam/v2beta1/groups/r%20x/c%2Fd");
    expect(seen[0]!.req.uid).toBe("r x/c%2Fd");
  });

  it("lists with snake_case and camelCase parameters; int64 as a string; absent token left out", async () => {
    const r = await call(
      "GET",
      "/iam/v2beta1/groups?uidp.descendants_of=r&pageSize=2&skip=1&order_by=name",
    );
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      groups: [expect.objectContaining({ uid: "r/a" }), expect.objectContaining({ uid: "r/b" })],
      totalCount: "3",
      skipped: 1,
    });
    expect(r.json).not.toHaveProperty("nextPageToken");
    expect(seen[0]!.req).toMatchObject({
      pageSize: 2,
      skip: 1,
      orderBy: "name",
      uidp: { descendantsOf: "r" },
    });
    const next = await call("GET", "/iam/v2beta1/groups?page_token=t");
    expect(next.json.nextPageToken).toBe("next");
  });

  it("creates an organization with POST on the collection (empty parent)", async () => {
    const r = await call("POST", "/iam/v2beta1/groups", { json: { name: "acme" } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ uid: "root", name: "acme" });
    expect(seen[0]!.req).toMatchObject({ parent: "", group: { name: "acme" } });
  });

  it("creates a child with the parent from the path", async () => {
    await call("POST", "/iam/v2beta1/groups/r/c", {
      json: { name: "team" },
      headers: { "content-type": "application/json; charset=UTF-8" },
    });
    expect(seen[0]!.req).toMatchObject({ parent: "r/c", group: { name: "team" } });
  });

  it("patches with the JSON keys as the mask and the path's uid", async () => {
    const r = await call("PATCH", "/iam/v2beta1/groups/r/c", {
      json: { uid: "evil", description: "" },
    });
    expect(r.status).toBe(200);
    expect(seen[0]!.req).toMatchObject({
      group: { uid: "r/c", description: "" },
      updateMask: { paths: ["uid", "description"] },
    });
    await call("PATCH", "/iam/v2beta1/groups/r/c?updateMask=name", {
      json: { name: "x", description: "y" },
    });
    expect(seen[1]!.req).toMatchObject({ updateMask: { paths: ["name"] } });
  });

  it("deletes with {}", async () => {
    const r = await call("DELETE", "/iam/v2beta1/groups/r/c");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({});
    expect(seen[0]!.req).toMatchObject({ uid: "r/c" });
  });

  it("answers HEAD like GET without a body", async () => {
    const r = await call("HEAD", "/iam/v2beta1/groups/r");
    expect(r.status).toBe(200);
    expect(r.text).toBe("");
    expect(seen[0]!.req.uid).toBe("r");
  });

  it("records the RPC and its code for the request log", async () => {
    await call("GET", "/iam/v2beta1/groups/r");
    expect(lines).toEqual([
      {
        url: "/iam/v2beta1/groups/r",
        rpc: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
        code: 0,
        status: 200,
      },
    ]);
  });
});

describe("errors from handlers", () => {
  it.each([
    ["invalid", 400, Code.InvalidArgument],
    ["precondition", 400, Code.FailedPrecondition],
    ["unauthenticated", 401, Code.Unauthenticated],
    ["denied", 403, Code.PermissionDenied],
    ["missing", 404, Code.NotFound],
    ["exists", 409, Code.AlreadyExists],
    ["aborted", 409, Code.Aborted],
    ["unimplemented", 501, Code.Unimplemented],
    ["busy", 503, Code.Unavailable],
    ["boom", 500, Code.Internal],
  ])("%s -> HTTP %i, code %i", async (uid, status, code) => {
    const r = await call("GET", `/iam/v2beta1/groups/${uid}`);
    const details = expectApiError(r, status, code);
    expect(lines[0]).toMatchObject({
      rpc: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
      code,
      status,
    });
    expect(r.res.headers.get("www-authenticate")).toBe(
      code === Code.Unauthenticated ? "Bearer" : null,
    );
    if (uid === "invalid") {
      expect(r.json.message).toBe("Invalid argument: uid: not a uid");
      expect(fieldsOf(details)).toEqual(["uid"]);
    }
    if (uid === "busy") expect(r.res.headers.get("retry-after")).toBe("5");
  });

  it("hides an unexpected cause behind a generic INTERNAL and logs it", async () => {
    const r = await call("GET", "/iam/v2beta1/groups/boom");
    expect(r.json).toEqual({
      code: 13,
      message: "Internal error",
      details: [
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INTERNAL", domain },
      ],
    });
    expect(r.text).not.toContain("hunter2");
    expect(JSON.stringify(logged)).toContain("hunter2");
  });

  it("answers UNIMPLEMENTED for a method the impl lacks, as the router does", async () => {
    const partial = Fastify();
    const pipeline = createUnaryPipeline({
      interceptors: [],
      domain,
      log: () => {},
      shutdownSignal: new AbortController().signal,
    });
    await partial.register(restGateway, {
      services: [registration(GroupsService, {})],
      pipeline,
      domain,
      log: () => {},
    });
    const res = await partial.inject({ method: "GET", url: "/iam/v2beta1/groups/r" });
    expect(res.statusCode).toBe(501);
    expect(res.json()).toMatchObject({ code: 12 });
    await partial.close();
  });
});

describe("interceptors", () => {
  it("run before the handler and can reject", async () => {
    const r = await call("GET", "/iam/v2beta1/groups/r", { headers: { "x-reject": "1" } });
    expectApiError(r, 401, Code.Unauthenticated);
    expect(r.res.headers.get("www-authenticate")).toBe("Bearer");
    expect(r.json.message).toBe("Unauthenticated: rejected by the interceptor");
    expect(seen).toEqual([]);
  });

  it("see the context values of the same factory as the router", async () => {
    const r = await call("DELETE", "/iam/v2beta1/groups/r", { headers: { "x-tenant": "t1" } });
    expect(r.res.headers.get("x-tenant-seen")).toBe("t1");
  });
});

describe("errors before the handler", () => {
  it.each([
    ["GET", "/iam/v2beta1/groups?bogus=1", undefined, "bogus", "ListGroups"],
    ["GET", "/iam/v2beta1/groups?page_size=ten", undefined, "page_size", "ListGroups"],
    ["GET", "/iam/v2beta1/groups/r?uid=x", undefined, "uid", "GetGroup"],
    ["POST", "/iam/v2beta1/groups", '{"name":"a","colour":"red"}', "group.colour", "CreateGroup"],
    ["POST", "/iam/v2beta1/groups", '{"name":', "group", "CreateGroup"],
    ["POST", "/iam/v2beta1/groups", '{"name":7}', "group.name", "CreateGroup"],
    ["PATCH", "/iam/v2beta1/groups/r", '{"verified":"yes"}', "group.verified", "UpdateGroup"],
    ["DELETE", "/iam/v2beta1/groups/r", '{"uid":"x"}', "body", "DeleteGroup"],
  ])("%s %s %s -> INVALID_ARGUMENT on %s", async (method, path, body, field, rpc) => {
    const r = await call(method, path, {
      ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
    });
    const details = expectApiError(r, 400, Code.InvalidArgument);
    expect(details[0]).toMatchObject({ reason: "INVALID_ARGUMENT" });
    expect(fieldsOf(details)).toEqual([field]);
    expect(r.json.message).toMatch(
      new RegExp(`^Invalid argument: ${field.replace(/[.[\]]/g, "\\$&")}: `),
    );
    expect(seen).toEqual([]);
    expect(lines[0]).toMatchObject({
      rpc: `gatehouse.iam.v2beta1.GroupsService/${rpc}`,
      code: 3,
      status: 400,
    });
  });

  it.each([
    ["text/plain", "hello"],
    ["application/x-www-form-urlencoded", "name=a"],
    ["application/json; charset=latin1", '{"name":"a"}'],
    [undefined, '{"name":"a"}'],
  ])("refuses a body of type %s with 415", async (type, body) => {
    const r = await call("POST", "/iam/v2beta1/groups", {
      body: new TextEncoder().encode(body),
      headers: type ? { "content-type": type } : {},
    });
    expectApiError(r, 415, Code.InvalidArgument);
    expect(r.json.message).toContain("send application/json");
    expect(seen).toEqual([]);
    expect(lines[0]).toMatchObject({
      rpc: "gatehouse.iam.v2beta1.GroupsService/CreateGroup",
      code: 3,
    });
  });

  it("accepts an empty body whatever its type", async () => {
    const r = await call("POST", "/iam/v2beta1/groups/r", {
      headers: { "content-type": "text/plain" },
    });
    expect(r.status).toBe(200);
    expect(seen[0]!.req).toMatchObject({ parent: "r" });
  });

  it("refuses a body that is not UTF-8", async () => {
    const r = await call("POST", "/iam/v2beta1/groups", {
      body: new Uint8Array([0x7b, 0xff, 0x7d]),
      headers: { "content-type": "application/json" },
    });
    expectApiError(r, 400, Code.InvalidArgument);
  });

  it("refuses a body over 1 MiB with RESOURCE_EXHAUSTED and HTTP 413", async () => {
    const big = JSON.stringify({ name: "a", description: "x".repeat(1024 * 1024) });
    const r = await call("POST", "/iam/v2beta1/groups", {
      body: big,
      headers: { "content-type": "application/json" },
    });
    expectApiError(r, 413, Code.ResourceExhausted);
    expect(r.json.message).toBe(
      "Resource exhausted: the request body is larger than 1048576 bytes",
    );
    expect(seen).toEqual([]);
    expect(lines[0]).toMatchObject({
      rpc: "gatehouse.iam.v2beta1.GroupsService/CreateGroup",
      code: 8,
      status: 413,
    });
  });

  it("refuses a malformed percent-encoding in the URL with the error body", async () => {
    const r = await call("GET", "/iam/v2beta1/groups/r%zz");
    expectApiError(r, 400, Code.InvalidArgument);
    expect(r.json.message).toContain("not a valid url component");
  });

  it("refuses a malformed Content-Type with 415", async () => {
    const r = await call("POST", "/iam/v2beta1/groups", {
      body: "{}",
      headers: { "content-type": "/" },
    });
    expectApiError(r, 415, Code.InvalidArgument);
  });
});

describe("routing", () => {
  it.each([
    ["GET", "/nope"],
    ["GET", "/iam/v2beta1/nothing/x"],
    ["POST", "/iam/v2beta1/groups:redeem"],
    ["GET", "/"],
  ])("%s %s -> 404 NOT_FOUND with the error body", async (method, path) => {
    const r = await call(method, path);
    expectApiError(r, 404, Code.NotFound);
    expect(r.json.message).toContain(`no REST route for ${method} ${path}`);
    expect(lines[0]).toMatchObject({ code: 5, status: 404, rpc: undefined });
  });

  it("answers an unknown path with the body sendError makes of noRouteError, to the byte", async () => {
    // What the 404 used to be built from per request (an Error, its stack, a protobuf
    // rendering): the body written from the template must not differ from it.
    const long = `/x/${"a".repeat(300)}`;
    const paths = ["/nope", "/n%22o%5Cpe/%E2%9C%93", long, "/x?q=%22y%22"];
    const sentType = (await call("PUT", "/iam/v2beta1/groups/r", { json: {} })).res.headers.get(
      "content-type",
    );
    lines = [];
    for (const path of paths) {
      const r = await call("DELETE", path);
      const asked = path.split("?")[0]!;
      const expected = toRestErrorBody(toApiError(noRouteError("DELETE", asked), domain, () => {}));
      expect(r.status).toBe(404);
      // The headers sendError's answers carry (a 405's is one).
      expect(r.res.headers.get("content-type")).toBe(sentType);
      expect(r.text).toBe(JSON.stringify(expected));
    }
    expect(lines.map((l) => [l.code, l.status, l.rpc])).toEqual(
      paths.map(() => [Code.NotFound, 404, undefined]),
    );
    expect(logged).toEqual([]);
  });

  it("answers a known path with another method 405 with Allow", async () => {
    const r = await call("PUT", "/iam/v2beta1/groups/r", { json: {} });
    expectApiError(r, 405, Code.Unimplemented);
    expect(r.res.headers.get("allow")).toBe("GET, HEAD, POST, PATCH, DELETE, OPTIONS");
    expect(r.json.message).toContain("method PUT is not allowed");
  });

  it("answers OPTIONS with 204 and Allow", async () => {
    const r = await call("OPTIONS", "/iam/v2beta1/groups/r");
    expect(r.status).toBe(204);
    expect(r.res.headers.get("allow")).toBe("GET, HEAD, POST, PATCH, DELETE, OPTIONS");
    expectApiError(await call("OPTIONS", "/nope"), 404, Code.NotFound);
  });

  it("leaves exact routes to fastify: health and Connect", async () => {
    const health = await call("GET", "/healthz");
    expect(health.json).toEqual({ status: "SERVING" });
    // Connect's unary JSON protocol on the router, same impl, same interceptors.
    const r = await call("POST", "/gatehouse.iam.v2beta1.GroupsService/GetGroup", {
      json: { uid: "r/c" },
      headers: { "x-tenant": "c" },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ uid: "r/c", name: "n" });
    expect(r.res.headers.get("x-tenant-seen")).toBe("c");
    expect(seen[0]!.ctx.protocolName).toBe("connect");
  });

  it("aborts the handler's signal when the client goes away", async () => {
    const controller = new AbortController();
    const pending = fetch(`${base}/iam/v2beta1/groups/slow`, { signal: controller.signal }).catch(
      (e) => e,
    );
    await expect.poll(() => seen.length).toBe(1);
    controller.abort();
    await pending;
    await expect.poll(() => seen[0]!.ctx.signal.aborted).toBe(true);
    expect(ConnectError.from(seen[0]!.ctx.signal.reason).code).toBe(Code.Canceled);
  });
});

describe("with CORS", () => {
  it("leaves preflights to @fastify/cors and still answers REST", async () => {
    const withCors = await buildApp({ cors: true });
    try {
      const pre = await fetch(`${withCors.url}/iam/v2beta1/groups/r`, {
        method: "OPTIONS",
        headers: { origin: "https://ui.example", "access-control-request-method": "PATCH" },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get("access-control-allow-origin")).toBe("*");
      const get = await fetch(`${withCors.url}/iam/v2beta1/groups/r`, {
        headers: { origin: "https://ui.example" },
      });
      expect(get.status).toBe(200);
      expect(get.headers.get("access-control-allow-origin")).toBe("*");
      const put = await fetch(`${withCors.url}/iam/v2beta1/groups/r`, { method: "PUT" });
      expect(put.status).toBe(405);
      expect(put.headers.get("allow")).toBe("GET, HEAD, POST, PATCH, DELETE");
    } finally {
      await withCors.app.close();
    }
  });
});
