import http2 from "node:http2";
import zlib from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetGroupRequestSchema } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { type LeanPair, logLineOf, startLeanPair } from "../helpers/lean-pair.js";
import { type RawAnswer, rawPost } from "../helpers/raw-http.js";
import type { TestOrg } from "../helpers/test-server.js";

// The lean unary Connect path (src/grpc/unary-connect.ts) against the Connect router and the
// hooks that shape its answers: two servers on one store, the same requests by hand, the same
// answers (status, headers, body bytes), and the same request log line.

const groups = "/gatehouse.iam.v2beta1.GroupsService";
let pair: LeanPair;
let org: TestOrg;
// Which path ran each call, by request id: the lean path's frames are on the interceptor's stack.
const servedBy = new Map<string, "lean" | "router">();
const spy: Interceptor = (next) => (req) => {
  const id = req.header.get("x-request-id");
  if (id) {
    // Deep enough to reach the lean path's frame below the interceptors and the pipeline.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 40;
    const stack = new Error().stack;
    Error.stackTraceLimit = limit;
    servedBy.set(id, stack?.includes("src/grpc/unary-connect") ? "lean" : "router");
  }
  return next(req);
};

beforeAll(async () => {
  pair = await startLeanPair(spy, {
    GATEHOUSE_CORS_ORIGINS: "https://console.test",
  });
  org = await pair.lean.makeOrg();
  // Enough groups that a page of them is over connect's 1 KiB compression threshold.
  for (let i = 0; i < 20; i++) {
    const res = await post(
      pair.lean.url,
      `${groups}/CreateGroup`,
      org.owner.headers,
      json({
        parent: org.uid,
        group: { name: `team-${i}`, description: "a group to list" },
      }),
    );
    expect(res.status).toBe(200);
  }
});
afterAll(() => pair.close());

/** POST by hand over HTTP/1.1: nothing added, nothing decompressed. */
const post = (
  base: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  type = "application/json",
) => rawPost(`${base}${path}`, { "content-type": type, ...headers }, body);

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const getGroup = (uid: string) =>
  Buffer.from(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid })));

/** What must match between the two paths. */
function comparable(a: RawAnswer) {
  const { date: _d, "x-request-id": _r, "keep-alive": _k, connection: _c, ...headers } = a.headers;
  return { status: a.status, headers, body: a.body.toString("base64") };
}

type Case = [string, string, () => Record<string, string>, () => Buffer, string?];
const cases: Case[] = [
  ["GetGroup in JSON", `${groups}/GetGroup`, () => org.owner.headers, () => json({ uid: org.uid })],
  [
    "GetGroup in binary",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => getGroup(org.uid),
    "application/proto",
  ],
  ["no token", `${groups}/GetGroup`, () => ({}), () => json({ uid: org.uid })],
  [
    "a group that is not there",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => json({ uid: `${org.uid}/0123456789abcdef` }),
  ],
  ["JSON cut short", `${groups}/GetGroup`, () => org.owner.headers, () => Buffer.from('{"uid":')],
  ["an empty body", `${groups}/GetGroup`, () => org.owner.headers, () => Buffer.alloc(0)],
  [
    "a field the API does not know",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => json({ uid: org.uid, colour: "red" }),
  ],
  [
    "bytes that do not decode",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => Buffer.from([0x0a, 0xff, 0xff]),
    "application/proto",
  ],
  [
    "a message over 1 MiB",
    `${groups}/CreateGroup`,
    () => org.owner.headers,
    () => json({ parent: "a".repeat(2 << 20) }),
  ],
  [
    "a gzip body",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "content-encoding": "gzip" }),
    () => zlib.gzipSync(json({ uid: org.uid })),
  ],
  [
    "a gzip bomb",
    `${groups}/CreateGroup`,
    () => ({ ...org.owner.headers, "content-encoding": "gzip" }),
    () => zlib.gzipSync(Buffer.alloc(8 << 20)),
  ],
  [
    "an unknown encoding",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "content-encoding": "zstd" }),
    () => json({ uid: org.uid }),
  ],
  [
    "a gzip answer over 1 KiB",
    `${groups}/ListGroups`,
    () => ({ ...org.owner.headers, "accept-encoding": "gzip" }),
    () => json({}),
  ],
  [
    "a deadline",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "connect-timeout-ms": "5000" }),
    () => json({ uid: org.uid }),
  ],
  [
    "a deadline past what a timer holds",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "connect-timeout-ms": "9999999999" }),
    () => json({ uid: org.uid }),
  ],
  [
    "a malformed deadline",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "connect-timeout-ms": "soon" }),
    () => json({ uid: org.uid }),
  ],
  [
    "an invalid CreateGroup",
    `${groups}/CreateGroup`,
    () => org.owner.headers,
    () => json({ parent: org.uid }),
  ],
  [
    "a browser's request (CORS)",
    `${groups}/GetGroup`,
    () => ({
      ...org.owner.headers,
      origin: "https://console.test",
      "connect-protocol-version": "1",
    }),
    () => json({ uid: org.uid }),
  ],
  [
    "JSON with a charset",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => json({ uid: org.uid }),
    "application/json; charset=utf-8",
  ],
  ["health", "/grpc.health.v1.Health/Check", () => ({}), () => json({})],
];

describe("the lean unary Connect path answers as the Connect router does", () => {
  it.each(cases)("%s", async (label, path, headers, body, type) => {
    const id = `case-${label.replace(/\W+/g, "-")}`;
    const [a, b] = await Promise.all([
      post(pair.lean.url, path, { ...headers(), "x-request-id": `${id}-lean` }, body(), type),
      post(pair.routerUrl, path, { ...headers(), "x-request-id": `${id}-router` }, body(), type),
    ]);
    expect(comparable(a)).toEqual(comparable(b));
    expect(a.headers["x-request-id"]).toBe(`${id}-lean`);
    if (label.includes("gzip answer")) expect(a.headers["content-encoding"]).toBe("gzip");
    if (label.includes("CORS")) {
      expect(a.headers["access-control-allow-origin"]).toBe("https://console.test");
    }
    // Calls that reached the interceptors: each server served its own way (the charset
    // variant is left to the router on both).
    if (servedBy.has(`${id}-router`)) {
      expect(servedBy.get(`${id}-router`)).toBe("router");
      expect(servedBy.get(`${id}-lean`)).toBe(label.includes("charset") ? "router" : "lean");
    }
  });
});

it("writes the request log line the router's path writes", async () => {
  for (const auth of [org.owner.headers, {}]) {
    const lineOf = (which: "lean" | "router") => {
      const reqId = `log-${which}-${Object.keys(auth).length}`;
      return logLineOf(pair, which, reqId, (url) =>
        post(url, `${groups}/GetGroup`, { ...auth, "x-request-id": reqId }, json({ uid: org.uid })),
      );
    };
    const a = await lineOf("lean");
    expect(a).toMatchObject({
      method: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
      protocol: "connect",
    });
    expect(a).toEqual(await lineOf("router"));
  }
  expect(JSON.stringify(pair.logs.lean)).not.toContain(org.owner.token);
});

it("answers over HTTP/2 as the router does", async () => {
  const h2Post = (base: string, reqId: string) =>
    new Promise<RawAnswer>((resolve, reject) => {
      const client = http2.connect(base);
      client.on("error", reject);
      const req = client.request({
        ":method": "POST",
        ":path": `${groups}/GetGroup`,
        "content-type": "application/json",
        "x-request-id": reqId,
        ...org.owner.headers,
      });
      let head: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on("response", (h) => {
        head = h;
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        client.close();
        const { ":status": status, ...headers } = head;
        resolve({ status: Number(status), headers, body: Buffer.concat(chunks) });
      });
      req.on("error", reject);
      req.end(json({ uid: org.uid }));
    });
  const a = await h2Post(pair.lean.url, "h2-lean");
  const b = await h2Post(pair.routerUrl, "h2-router");
  expect(a.status).toBe(200);
  expect(comparable(a)).toEqual(comparable(b));
  expect(servedBy.get("h2-lean")).toBe("lean");
  expect(servedBy.get("h2-router")).toBe("router");
});
