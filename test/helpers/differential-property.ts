import zlib from "node:zlib";
import type { DescMethod, JsonObject } from "@bufbuild/protobuf";
import fc from "fast-check";
import { expect, it } from "vitest";
import { ruleOf } from "../../src/auth/policy.js";
import { compare, logMismatches, unnamedOnRouter } from "./differential-compare.js";
import type { RawRequest } from "./differential-pair.js";
import {
  type Auth,
  authHeaders,
  type Callers,
  encode,
  orgRequest,
  readsOnly,
} from "./differential-requests.js";
import { type DifferentialState, rpcOf } from "./differential-suite.js";
import { grpcEnvelope } from "./raw-grpc.js";

// The differential suite's property: whatever the headers and the body of a unary call (the
// content type's spelling, deadlines well-formed or not, encodings, duplicated headers, bytes
// at random, frames cut short, messages with fields the API does not know), the lean server
// answers what the router server answers. Each run draws a served method, a caller, headers
// and a body; fast-check shrinks a difference to its smallest form.

/**
 * Runs of each property: enough to draw every kind of header and body many times
 * (DIFF_RUNS=2000 for a longer search by hand).
 */
const numRuns = Number(process.env.DIFF_RUNS ?? 150);

/** Either absent (undefined), half the time, or one of `values`. */
const maybe = <T>(...values: T[]) =>
  fc.option(fc.constantFrom(...values), { nil: undefined, freq: 2 });

/**
 * `usual` half the time, else one of `others`: enough well-formed calls get through to a
 * handler that the property compares answers and not only refusals.
 */
const mostly = <T>(usual: T, ...others: T[]) =>
  fc.oneof(
    { arbitrary: fc.constant(usual), weight: 1 },
    { arbitrary: fc.constantFrom(...others), weight: 1 },
  );

/** What a body is made of; `valid` is the method's request (see `message`). */
const bodyKind = fc.oneof(
  { arbitrary: fc.constant({ kind: "valid" as const }), weight: 4 },
  fc.record({ kind: fc.constant("unknown field" as const), value: fc.nat() }),
  fc.record({ kind: fc.constant("random" as const), bytes: fc.uint8Array({ maxLength: 48 }) }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
  fc.constant({ kind: "gzipped" as const }),
);
type BodyKind = typeof bodyKind extends fc.Arbitrary<infer T> ? T : never;

/**
 * The request a run sends as `auth`: the one naming the organization, but the empty one for
 * an owner's write (never run a write that could succeed: the two servers share a store).
 */
function message(method: DescMethod, auth: Auth, callers: Callers): JsonObject {
  if (auth === "owner" && !readsOnly(method)) return {};
  const caller = auth === "other" ? callers.other.uid : callers.owner.uid;
  return orgRequest(method, callers.orgUid, caller);
}

/**
 * Who sends a run's call: as drawn, but a forged token for random bytes to a write. Random
 * bytes may decode to a write that succeeds (any person may create an organization), and one
 * that succeeded on one server would leave the other a different store.
 */
function caller(method: DescMethod, auth: Auth, body: BodyKind): Auth {
  return body.kind === "random" && !readsOnly(method) ? "bad" : auth;
}

/** A field the API does not know (number 9999, varint), as protobuf binary. */
function unknownField(value: number): Buffer {
  const bytes: number[] = [];
  for (let v = BigInt((9999 << 3) | 0), i = 0; i < 2; i++) {
    // The key, then the value: each a base-128 varint.
    while (v >= 0x80n) {
      bytes.push(Number((v & 0x7fn) | 0x80n));
      v >>= 7n;
    }
    bytes.push(Number(v));
    v = BigInt(value);
  }
  return Buffer.from(bytes);
}

/** A gRPC body of `kind` for `json`. */
function grpcBody(method: DescMethod, json: JsonObject, b: BodyKind): Buffer {
  const binary = encode(method, json, "connect+proto");
  switch (b.kind) {
    case "valid":
      return grpcEnvelope(binary);
    case "unknown field":
      return grpcEnvelope(Buffer.concat([binary, unknownField(b.value)]));
    case "random":
      return Buffer.from(b.bytes);
    case "cut": {
      const whole = grpcEnvelope(binary);
      return whole.subarray(0, b.at % whole.length);
    }
    case "gzipped":
      return grpcEnvelope(zlib.gzipSync(binary), true);
  }
}

/** A Connect body of `kind` for `json`, as JSON or as binary. */
function connectBody(method: DescMethod, json: JsonObject, b: BodyKind, binary: boolean): Buffer {
  const whole = encode(method, json, binary ? "connect+proto" : "connect+json");
  switch (b.kind) {
    case "valid":
      return whole;
    case "unknown field":
      return binary
        ? Buffer.concat([whole, unknownField(b.value)])
        : Buffer.from(JSON.stringify({ ...json, notAField: b.value }));
    case "random":
      return Buffer.from(b.bytes);
    case "cut":
      return whole.subarray(0, whole.length === 0 ? 0 : b.at % whole.length);
    case "gzipped":
      return zlib.gzipSync(whole);
  }
}

/** `headers` with `name` sent twice (a second value after the first). */
function duplicated(
  headers: Record<string, string | string[]>,
  name: string | undefined,
  second: string,
): Record<string, string | string[]> {
  if (name === undefined) return headers;
  const first = headers[name];
  return { ...headers, [name]: [...(first === undefined ? [] : [first].flat()), second] };
}

/** Headers without the absent ones. */
const present = (h: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;

/**
 * Half the runs are well-formed calls (only the method, the caller and the transport
 * drawn), so that the property compares answers from the handlers, not only refusals.
 */
const clean = fc.boolean();
const cleanCall = {
  timeout: undefined,
  encoding: undefined,
  acceptEncoding: undefined,
  contentEncoding: undefined,
  protocolVersion: undefined,
  duplicate: undefined,
  body: { kind: "valid" as const },
};

/** A user agent of printable characters, as clients send them. */
const userAgent = fc.option(fc.stringMatching(/^[!-~]([ -~]{0,30}[!-~])?$/), { nil: undefined });
const auth = mostly<Auth>("owner", "none", "bad", "other");

/**
 * A known difference, left out of the property and pinned in describeKnownDifferences: a
 * body that is a message's 5-byte prefix alone (a length above 0, then nothing) is
 * UNIMPLEMENTED "missing input message" on the router (connect's envelope reader ends
 * without a message or an error) and INVALID_ARGUMENT "incomplete envelope" on the lean path.
 */
function prefixAlone(body: Buffer): boolean {
  return body.length === 5 && body.readUInt32BE(1) > 0;
}

/** The gRPC property and the Connect property, over the state's served methods. */
export function describeProperties(state: () => DifferentialState): void {
  it("gRPC: any headers and body get the router's answer", async () => {
    const s = state();
    const seen = new Set<unknown>();
    // Each call sent, by request id: the same request log line on both paths, too.
    const sent = new Map<string, string>();
    const call = fc.record({
      method: fc.constantFrom(...s.methods),
      auth,
      contentType: mostly(
        "application/grpc",
        "application/grpc+proto",
        "application/grpc+json",
        "application/grpc; charset=utf-8",
        "Application/GRPC",
        "application/grpc+PROTO",
        "application/grpc-web",
        "application/proto",
      ),
      // Deadlines far enough away that none passes during a run (when one passes is timing).
      timeout: maybe("30S", "100000m", "2M", "99999999H", "soon", "1.5S", "-1S", "123456789S", ""),
      encoding: maybe("identity", "gzip", "br", "zstd", "GZIP", "gzip, br", ""),
      acceptEncoding: maybe("gzip", "br", "identity", "zstd, gzip", "*"),
      // Node's client sends `te: trailers` or none: nothing else passes an HTTP/2 proxy either.
      te: maybe("trailers"),
      userAgent,
      duplicate: maybe("grpc-timeout", "grpc-encoding", "grpc-accept-encoding"),
      body: bodyKind,
      clean,
    });
    await fc.assert(
      fc.asyncProperty(call, async (drawn) => {
        const c = drawn.clean
          ? { ...drawn, ...cleanCall, contentType: "application/grpc" as const }
          : drawn;
        const who = caller(c.method, c.auth, c.body);
        const json = message(c.method, who, s.callers);
        const id = s.nextId();
        const headers = duplicated(
          {
            "content-type": c.contentType,
            ...present({
              te: c.te,
              "grpc-timeout": c.timeout,
              "grpc-encoding": c.encoding,
              "grpc-accept-encoding": c.acceptEncoding,
              "user-agent": c.userAgent,
            }),
            ...authHeaders(who, s.callers),
            "x-request-id": id,
          },
          c.duplicate,
          c.duplicate === "grpc-timeout" ? "60S" : "gzip",
        );
        const req: RawRequest = {
          path: `/${rpcOf(c.method)}`,
          headers,
          body: grpcBody(c.method, json, c.body),
        };
        fc.pre(!prefixAlone(req.body as Buffer));
        const { lean, mismatch } = await compare(s.pair, "grpc", req, rpcOf(c.method));
        sent.set(id, JSON.stringify({ ...c, method: rpcOf(c.method) }));
        expect(mismatch).toBeUndefined();
        seen.add(lean.trailers["grpc-status"] ?? lean.headers["grpc-status"]);
      }),
      { numRuns },
    );
    // Not only refusals: calls that got through to a handler and succeeded, and others.
    expect(await logMismatches(s.pair, sent, unnamedOnRouter)).toEqual([]);
    expect(seen).toContain("0");
    expect(seen.size).toBeGreaterThan(3);
  }, 120_000);

  it("Connect: any headers and body get the router's answer, over HTTP/1.1 and HTTP/2", async () => {
    const s = state();
    const seen = new Set<unknown>();
    // Each call sent, by request id: the same request log line on both paths, too.
    const sent = new Map<string, string>();
    const call = fc.record({
      method: fc.constantFrom(...s.methods),
      auth,
      http1: fc.boolean(),
      // HTTP/1.1 keeps a header name's case; HTTP/2 has lowercase names only.
      upperNames: fc.boolean(),
      contentType: mostly(
        "application/json",
        "application/proto",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "Application/JSON",
        "application/connect+json",
        "application/x-protobuf",
        "text/plain",
      ),
      // A body in the content type's format, mostly.
      otherFormat: fc.oneof(
        { arbitrary: fc.constant(false), weight: 3 },
        { arbitrary: fc.constant(true), weight: 1 },
      ),
      timeout: maybe("30000", "9999999999", "99999999999", "soon", "-1", "1e4", " 30000", ""),
      contentEncoding: maybe("identity", "gzip", "br", "zstd", "GZIP"),
      acceptEncoding: maybe("gzip", "br", "identity", "*", "gzip;q=0"),
      protocolVersion: maybe("1", "2"),
      userAgent,
      duplicate: maybe("connect-timeout-ms", "accept-encoding", "connect-protocol-version"),
      body: bodyKind,
      clean,
    });
    await fc.assert(
      fc.asyncProperty(call, async (drawn) => {
        const c = drawn.clean
          ? { ...drawn, ...cleanCall, contentType: "application/json" as const, otherFormat: false }
          : drawn;
        const who = caller(c.method, c.auth, c.body);
        const json = message(c.method, who, s.callers);
        const id = s.nextId();
        let headers = duplicated(
          {
            "content-type": c.contentType,
            ...present({
              "connect-timeout-ms": c.timeout,
              "content-encoding": c.contentEncoding,
              "accept-encoding": c.acceptEncoding,
              "connect-protocol-version": c.protocolVersion,
              "user-agent": c.userAgent,
            }),
            ...authHeaders(who, s.callers),
            "x-request-id": id,
          },
          c.duplicate,
          c.duplicate === "connect-protocol-version" ? "1" : "60000",
        );
        if (c.http1 && c.upperNames) {
          headers = Object.fromEntries(
            Object.entries(headers).map(([k, v]) => [
              k.replace(/\b\w/g, (l) => l.toUpperCase()),
              v,
            ]),
          );
        }
        const req: RawRequest = {
          path: `/${rpcOf(c.method)}`,
          headers,
          body: connectBody(
            c.method,
            json,
            c.body,
            c.contentType.includes("proto") !== c.otherFormat,
          ),
          http1: c.http1,
        };
        const { lean, mismatch } = await compare(s.pair, "connect+json", req, rpcOf(c.method));
        sent.set(id, JSON.stringify({ ...c, method: rpcOf(c.method) }));
        expect(mismatch).toBeUndefined();
        seen.add(String(lean.status));
      }),
      { numRuns },
    );
    expect(await logMismatches(s.pair, sent, unnamedOnRouter)).toEqual([]);
    expect(seen).toContain("200");
    expect(seen.size).toBeGreaterThan(3);
  }, 120_000);
}

/**
 * The differences the property left out, each as a test of the answer the two paths should
 * share. One still differing is marked as failing (`it.fails`): it fails once the lean path
 * answers as the router does, and then the mark and the property's exclusion go. The unknown
 * encoding case lost its mark when the lean gRPC path came to check the encoding first.
 */
export function describeKnownDifferences(state: () => DifferentialState): void {
  it("gRPC: an unknown grpc-encoding without a valid token is refused as the router refuses it", async () => {
    const s = state();
    const guarded = s.methods.filter((m) => ruleOf(rpcOf(m))?.kind !== "public");
    for (const method of guarded.slice(0, 5)) {
      for (const a of ["none", "bad"] as const) {
        const req: RawRequest = {
          path: `/${rpcOf(method)}`,
          headers: {
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-encoding": "zstd",
            ...authHeaders(a, s.callers),
          },
          body: grpcBody(method, message(method, a, s.callers), { kind: "valid" }),
        };
        const { mismatch } = await compare(s.pair, "grpc", req, `${rpcOf(method)} ${a}`);
        expect(mismatch).toBeUndefined();
      }
    }
  });

  it.fails("gRPC: a message's prefix alone is refused as the router refuses it", async () => {
    const s = state();
    for (const method of s.methods.slice(0, 5)) {
      const req: RawRequest = {
        path: `/${rpcOf(method)}`,
        headers: { "content-type": "application/grpc", te: "trailers", ...s.callers.owner.headers },
        body: grpcEnvelope(Buffer.from([0x0a, 1, 0x61])).subarray(0, 5),
      };
      const { mismatch } = await compare(s.pair, "grpc", req, rpcOf(method));
      expect(mismatch).toBeUndefined();
    }
  });

  it.fails("gRPC: a message that does not decode is logged as the router logs it", async () => {
    const s = state();
    const sent = new Map<string, string>();
    for (const method of s.methods.slice(0, 5)) {
      const id = s.nextId();
      const req: RawRequest = {
        path: `/${rpcOf(method)}`,
        headers: {
          "content-type": "application/grpc",
          te: "trailers",
          "x-request-id": id,
          ...s.callers.owner.headers,
        },
        body: grpcEnvelope(Buffer.from([0x0a, 0xff, 0xff])),
      };
      const { mismatch } = await compare(s.pair, "grpc", req, rpcOf(method));
      expect(mismatch).toBeUndefined();
      sent.set(id, rpcOf(method));
    }
    expect(await logMismatches(s.pair, sent)).toEqual([]);
  });
}
