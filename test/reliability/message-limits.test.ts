import zlib from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { rawPost } from "../helpers/raw-http.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// API.md "Limits": a message is at most 1 MiB on every protocol, measured after
// decompression. A compressed "bomb" must be refused without being inflated past the limit,
// and a call that needs a token and has none is refused from its headers, before any of
// its body is read (UNAUTHENTICATED: the bomb is not even looked at).

const MiB = 1024 * 1024;
const createGroup = "/gatehouse.iam.v2beta1.GroupsService/CreateGroup";

let org: TestOrg;
// Inflate to 64 MiB of zeros: a few kB on the wire.
const bombSize = 64 * MiB;
const gzipBomb = zlib.gzipSync(Buffer.alloc(bombSize), { level: 9 });
const brotliBomb = zlib.brotliCompressSync(Buffer.alloc(bombSize), {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 },
});

const srv = useTestServer();
beforeAll(async () => {
  org = await srv.makeOrg();
});

// gRPC and gRPC-Web frame messages alike.
const envelope = grpcEnvelope;

/** A message over 1 MiB that decodes: CreateGroupRequest{parent: "<2 MiB of a>"}. */
function bigMessage(): Buffer {
  const parent = Buffer.alloc(2 * MiB, "a");
  // field 1, wire type 2, length as a varint.
  const len: number[] = [];
  let n = parent.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([0x0a, ...len]), parent]);
}

const grpcCall = (body: Buffer, headers: Record<string, string>) =>
  rawGrpc(srv.url, createGroup, headers, body);

const h1Post = (path: string, body: Buffer, headers: Record<string, string>) =>
  rawPost(`${srv.url}${path}`, headers, body);

const exhausted = { grpc: "8", http: 429, code: "resource_exhausted", message: /larger than/ };
const unauthenticated = { grpc: "16", http: 401, code: "unauthenticated", message: /token/ };

describe.each([
  ["without a token (UNAUTHENTICATED, unread)", () => ({}), unauthenticated],
  ["with a token (RESOURCE_EXHAUSTED)", () => org.owner.headers, exhausted],
])("a message over 1 MiB %s", (_label, auth, want) => {
  it("gRPC, uncompressed", async () => {
    const a = await grpcCall(envelope(bigMessage(), false), auth());
    expect(a.grpcStatus).toBe(want.grpc);
  });

  it.each([
    ["gzip", gzipBomb],
    ["br", brotliBomb],
  ])("gRPC, a %s bomb is not inflated past the limit", async (encoding, bomb) => {
    const a = await grpcCall(envelope(bomb, true), { ...auth(), "grpc-encoding": encoding });
    expect(a.grpcStatus).toBe(want.grpc);
    expect(
      decodeURIComponent(String(a.trailers["grpc-message"] ?? a.headers["grpc-message"])),
    ).toMatch(want.message);
  });

  it("gRPC-Web, a brotli bomb", async () => {
    const res = await h1Post(createGroup, envelope(brotliBomb, true), {
      ...auth(),
      "content-type": "application/grpc-web+proto",
      "grpc-encoding": "br",
    });
    // gRPC-Web carries the status in headers (trailers-only) or in a trailer frame of the body.
    const status =
      res.headers["grpc-status"] ?? /grpc-status:\s*(\d+)/.exec(res.body.toString())?.[1];
    expect(status).toBe(want.grpc);
  });

  it("Connect JSON, uncompressed", async () => {
    const body = Buffer.from(JSON.stringify({ parent: "a".repeat(2 * MiB) }));
    const res = await h1Post(createGroup, body, {
      ...auth(),
      "content-type": "application/json",
      "connect-protocol-version": "1",
    });
    expect(res.status).toBe(want.http);
    expect(JSON.parse(res.body.toString()).code).toBe(want.code);
  });

  it.each([
    ["gzip", gzipBomb],
    ["br", brotliBomb],
  ])("Connect, a %s bomb", async (encoding, bomb) => {
    const res = await h1Post(createGroup, bomb, {
      ...auth(),
      "content-type": "application/proto",
      "content-encoding": encoding,
      "connect-protocol-version": "1",
    });
    expect(res.status).toBe(want.http);
    expect(JSON.parse(res.body.toString()).code).toBe(want.code);
  });
});

it("a message just under the limit is still served", async () => {
  const res = await fetch(`${srv.url}${createGroup}`, {
    method: "POST",
    headers: {
      ...org.owner.headers,
      "content-type": "application/json",
      "connect-protocol-version": "1",
    },
    body: JSON.stringify({ parent: org.uid, group: { name: "x", description: "d".repeat(1000) } }),
  });
  // Refused for its description's length, which means the message was read and decoded.
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toMatch(/description/);
});
