import http2 from "node:http2";
import zlib from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateGroupRequestSchema,
  GetGroupRequestSchema,
  ListGroupsRequestSchema,
} from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { HealthCheckRequestSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { type LeanPair, logLineOf, startLeanPair } from "../helpers/lean-pair.js";
import { grpcEnvelope, type RawGrpcAnswer, rawGrpc } from "../helpers/raw-grpc.js";
import type { TestOrg, TestServer } from "../helpers/test-server.js";

// The lean unary gRPC path (src/grpc/unary-grpc.ts) against the Connect router it stands in
// front of: two servers on one store, the same requests by hand, the same answers. Only the
// framing of an error may differ (the lean path answers trailers-only, the router sends
// headers, then trailers); status, message, details, headers and message bytes may not.

const groups = "/gatehouse.iam.v2beta1.GroupsService";
let pair: LeanPair;
let lean: TestServer;
let routerUrl: string;
let org: TestOrg;
// Which path served each call: the lean path's context names the RPC by its path alone, the
// router's by the whole URL. Keyed by request id.
const servedBy = new Map<string, "lean" | "router">();
// A call with `x-test-hold: K` tells holds[K] it is inside the server, then waits a moment.
const holds = new Map<string, () => void>();
const spy: Interceptor = (next) => async (req) => {
  const id = req.header.get("x-request-id");
  if (id) servedBy.set(id, req.url.includes("://") ? "router" : "lean");
  const hold = holds.get(req.header.get("x-test-hold") ?? "");
  if (hold) {
    hold();
    await new Promise((r) => setTimeout(r, 50));
  }
  return next(req);
};

beforeAll(async () => {
  pair = await startLeanPair(spy);
  ({ lean, routerUrl } = pair);
  org = await lean.makeOrg();
  // Enough groups that a page of them is over connect's 1 KiB compression threshold.
  for (let i = 0; i < 20; i++) {
    const req = create(CreateGroupRequestSchema, {
      parent: org.uid,
      group: { name: `team-${i}`, description: "a group to list" },
    });
    const a = await rawGrpc(
      lean.url,
      `${groups}/CreateGroup`,
      org.owner.headers,
      grpcEnvelope(toBinary(CreateGroupRequestSchema, req)),
    );
    expect(a.grpcStatus).toBe("0");
  }
});
afterAll(() => pair.close());

const getGroup = (uid: string) =>
  toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid }));
const bigParent = () =>
  toBinary(
    CreateGroupRequestSchema,
    create(CreateGroupRequestSchema, { parent: "a".repeat(2 << 20) }),
  );

/** What must match between the two paths. */
function comparable(a: RawGrpcAnswer) {
  const all = { ...a.headers, ...a.trailers };
  return {
    status: a.status,
    grpcStatus: a.grpcStatus,
    message: all["grpc-message"],
    details: all["grpc-status-details-bin"],
    contentType: a.headers["content-type"],
    encoding: a.headers["grpc-encoding"],
    body: a.body.toString("base64"),
  };
}

type Case = [string, string, () => Record<string, string>, () => Buffer];
const cases: Case[] = [
  [
    "GetGroup",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  ["no token", `${groups}/GetGroup`, () => ({}), () => grpcEnvelope(getGroup(org.uid))],
  [
    "a bad token",
    `${groups}/GetGroup`,
    () => ({ authorization: "Bearer x.y.z" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "a group that is not there",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(getGroup(`${org.uid}/0123456789abcdef`)),
  ],
  [
    "a malformed uid",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(getGroup("not a uid: ünïcode%")),
  ],
  [
    "bytes that do not decode",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(Buffer.from([0x0a, 0xff, 0xff])),
  ],
  [
    "application/grpc+proto",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "content-type": "application/grpc+proto" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "a gzip message",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-encoding": "gzip" }),
    () => grpcEnvelope(zlib.gzipSync(getGroup(org.uid)), true),
  ],
  [
    "a compressed flag without an encoding",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(zlib.gzipSync(getGroup(org.uid)), true),
  ],
  [
    "a gzip bomb",
    `${groups}/CreateGroup`,
    () => ({ ...org.owner.headers, "grpc-encoding": "gzip" }),
    () => grpcEnvelope(zlib.gzipSync(Buffer.alloc(8 << 20)), true),
  ],
  [
    "a message over 1 MiB",
    `${groups}/CreateGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(bigParent()),
  ],
  ["no message", `${groups}/GetGroup`, () => org.owner.headers, () => Buffer.alloc(0)],
  [
    "two messages",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => Buffer.concat([grpcEnvelope(getGroup(org.uid)), grpcEnvelope(getGroup(org.uid))]),
  ],
  [
    "a frame cut short",
    `${groups}/GetGroup`,
    () => org.owner.headers,
    () => grpcEnvelope(getGroup(org.uid)).subarray(0, 12),
  ],
  [
    "a deadline",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-timeout": "5S" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "an invalid CreateGroup",
    `${groups}/CreateGroup`,
    () => org.owner.headers,
    () =>
      grpcEnvelope(
        toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { parent: org.uid })),
      ),
  ],
  [
    "an unknown encoding",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-encoding": "zstd" }),
    () => grpcEnvelope(getGroup(org.uid), true),
  ],
  [
    "a client that accepts gzip",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-accept-encoding": "identity,deflate,gzip" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "a malformed deadline",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-timeout": "soon" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "a deadline past what a timer holds",
    `${groups}/GetGroup`,
    () => ({ ...org.owner.headers, "grpc-timeout": "99999999H" }),
    () => grpcEnvelope(getGroup(org.uid)),
  ],
  [
    "a gzip answer over 1 KiB",
    `${groups}/ListGroups`,
    () => ({ ...org.owner.headers, "grpc-accept-encoding": "gzip" }),
    () => grpcEnvelope(toBinary(ListGroupsRequestSchema, create(ListGroupsRequestSchema))),
  ],
  [
    "health",
    "/grpc.health.v1.Health/Check",
    () => ({}),
    () => grpcEnvelope(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema))),
  ],
];

describe("the lean unary gRPC path answers as the Connect router does", () => {
  it.each(cases)("%s", async (label, path, headers, body) => {
    const id = `case-${label.replace(/\W+/g, "-")}`;
    const [a, b] = await Promise.all([
      rawGrpc(lean.url, path, { ...headers(), "x-request-id": `${id}-lean` }, body()),
      rawGrpc(routerUrl, path, { ...headers(), "x-request-id": `${id}-router` }, body()),
    ]);
    expect(comparable(a)).toEqual(comparable(b));
    if (label.includes("gzip answer")) expect(a.body[0]).toBe(1);
    expect(a.headers["x-request-id"]).toBe(`${id}-lean`);
    // Calls that reached the interceptors: each server served its own way.
    if (servedBy.has(`${id}-router`)) {
      expect(servedBy.get(`${id}-router`)).toBe("router");
      expect(servedBy.get(`${id}-lean`)).toBe("lean");
    }
  });
});

describe("a client that walks away", () => {
  it.each([
    ["CANCEL", http2.constants.NGHTTP2_CANCEL],
    ["INTERNAL_ERROR", http2.constants.NGHTTP2_INTERNAL_ERROR],
    ["PROTOCOL_ERROR", http2.constants.NGHTTP2_PROTOCOL_ERROR],
  ])("resetting its stream with %s leaves the server serving", async (_name, code) => {
    const client = http2.connect(lean.url);
    // A GetGroup stream whose reset the client expects: its own error is not the test's.
    const open = (extra: Record<string, string> = {}) => {
      const req = client.request({
        ":method": "POST",
        ":path": `${groups}/GetGroup`,
        "content-type": "application/grpc",
        te: "trailers",
        ...extra,
        ...org.owner.headers,
      });
      req.on("error", () => undefined);
      return req;
    };
    try {
      for (const body of [Buffer.alloc(0), grpcEnvelope(getGroup(org.uid)).subarray(0, 8)]) {
        const req = open();
        if (body.length > 0) req.write(body);
        await new Promise((r) => setTimeout(r, 20));
        req.close(code);
        await new Promise((r) => req.once("close", r));
      }
      // The whole request sent, and reset while its handler runs: nothing reads the stream
      // then, so only the path's own "error" listener hears the reset.
      const entered = new Promise<void>((r) => holds.set(`walk-${code}`, r));
      const req = open({ "x-test-hold": `walk-${code}` });
      req.end(grpcEnvelope(getGroup(org.uid)));
      await entered;
      req.close(code);
      await new Promise((r) => req.once("close", r));
      // The handler finishes after the reset, and its answer has nowhere to go.
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      client.close();
    }
    const after = await rawGrpc(
      lean.url,
      `${groups}/GetGroup`,
      org.owner.headers,
      grpcEnvelope(getGroup(org.uid)),
    );
    expect(after.grpcStatus).toBe("0");
  });
});

it("writes the request log line the router's path writes", async () => {
  for (const auth of [org.owner.headers, {}]) {
    const lineOf = (which: "lean" | "router") => {
      const reqId = `log-${which}-${Object.keys(auth).length}`;
      return logLineOf(pair, which, reqId, (url) =>
        rawGrpc(
          url,
          `${groups}/GetGroup`,
          { ...auth, "x-request-id": reqId },
          grpcEnvelope(getGroup(org.uid)),
        ),
      );
    };
    const a = await lineOf("lean");
    expect(a).toMatchObject({
      method: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
      protocol: "grpc",
      status: 200,
    });
    expect(a).toEqual(await lineOf("router"));
  }
  // The bearer token never reaches the log.
  expect(JSON.stringify(pair.logs.lean)).not.toContain(org.owner.token);
});

it("reads a message that arrives a byte at a time", async () => {
  const client = http2.connect(lean.url);
  try {
    const answer = await new Promise<{ status: string | undefined; body: Buffer }>((done, fail) => {
      const req = client.request({
        ":method": "POST",
        ":path": `${groups}/GetGroup`,
        "content-type": "application/grpc",
        te: "trailers",
        ...org.owner.headers,
      });
      let status: string | undefined;
      const chunks: Buffer[] = [];
      req.on("trailers", (t) => {
        status = t["grpc-status"] as string | undefined;
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => done({ status, body: Buffer.concat(chunks) }));
      req.on("error", fail);
      const bytes = grpcEnvelope(getGroup(org.uid));
      let i = 0;
      const next = () => {
        if (i === bytes.length) {
          req.end();
          return;
        }
        req.write(bytes.subarray(i, i + 1), () => setImmediate(next));
        i++;
      };
      next();
    });
    expect(answer.status).toBe("0");
    const direct = await rawGrpc(
      lean.url,
      `${groups}/GetGroup`,
      org.owner.headers,
      grpcEnvelope(getGroup(org.uid)),
    );
    expect(answer.body.equals(direct.body)).toBe(true);
  } finally {
    client.close();
  }
});
