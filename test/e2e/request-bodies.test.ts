import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcEnvelope } from "../helpers/raw-grpc.js";
import {
  startTestServer,
  type TestOrg,
  type TestServer,
  useTestServer,
} from "../helpers/test-server.js";

// issue 23: request bodies were buffered before the token was checked (4 unauthenticated
// h2c connections held about 1 GiB), and nothing bounded the bytes all calls held together.

const createGroup = "/gatehouse.iam.v2beta1.GroupsService/CreateGroup";

/** A CreateGroupRequest whose group description (field 2.3) is `size` bytes: valid protobuf. */
function bigCreateGroup(parent: string, size: number): Buffer {
  const varint = (n: number) => {
    const out: number[] = [];
    while (n > 127) {
      out.push((n & 127) | 128);
      n >>>= 7;
    }
    out.push(n);
    return Buffer.from(out);
  };
  const field = (tag: number, bytes: Buffer) =>
    Buffer.concat([Buffer.from([(tag << 3) | 2]), varint(bytes.length), bytes]);
  const group = Buffer.concat([field(1, Buffer.from("big")), field(3, Buffer.alloc(size, 0x61))]);
  return grpcEnvelope(Buffer.concat([field(1, Buffer.from(parent)), field(2, group)]));
}

interface Sent {
  status: string | undefined;
  /** Bytes of the body the client had handed to the connection when the answer came. */
  flushedAtAnswer: number;
}

/**
 * Send `body` in 16 KiB writes over h2c, as fast as flow control lets it, and note how much
 * of it the server had let through when its answer came.
 */
function sendGrpc(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<Sent> {
  const session = http2.connect(url);
  return new Promise<Sent>((resolve) => {
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let flushed = 0;
    let flushedAtAnswer = -1;
    let status: string | undefined;
    req.on("response", (h) => {
      flushedAtAnswer = flushed;
      status = h["grpc-status"] as string | undefined;
    });
    req.on("trailers", (t) => {
      status = t["grpc-status"] as string | undefined;
    });
    req.on("error", () => {});
    req.on("data", () => {});
    req.on("close", () => {
      session.close();
      resolve({ status, flushedAtAnswer: flushedAtAnswer < 0 ? flushed : flushedAtAnswer });
    });
    const step = 16 * 1024;
    let at = 0;
    const next = () => {
      if (req.destroyed || req.closed || flushedAtAnswer >= 0) return;
      if (at >= body.length) {
        req.end();
        return;
      }
      const chunk = body.subarray(at, at + step);
      at += chunk.length;
      req.write(chunk, () => {
        flushed += chunk.length;
        next();
      });
    };
    next();
  });
}

describe("an unauthenticated body is refused before it is read", () => {
  let org: TestOrg;
  const ts = useTestServer();
  beforeAll(async () => {
    org = await ts.makeOrg("bodies");
  });

  it("lean gRPC: UNAUTHENTICATED after a small part of a 1 MiB body; with a token, all of it", async () => {
    const body = bigCreateGroup(org.uid, 1024 * 1024 - 200);
    // The baseline of this run: with a token the server reads the whole message, and then
    // refuses the description (too long).
    const read = await sendGrpc(ts.url, createGroup, org.owner.headers, body);
    expect(read.status).toBe("3");
    expect(read.flushedAtAnswer).toBe(body.length);
    for (const headers of [{}, { authorization: "Bearer not-a-token" }]) {
      const refused = await sendGrpc(ts.url, createGroup, headers, body);
      expect(refused.status).toBe("16");
      expect(refused.flushedAtAnswer).toBeLessThan(read.flushedAtAnswer / 4);
    }
  });

  it("lean gRPC: a refusal sent while the request is still open arrives whole, then RST_STREAM(NO_ERROR)", async () => {
    // Node 22 and 26 dropped the answer when the reset went out with it, on a connection that
    // had served a call before: the client got a bare RST_STREAM (grpc-js: INTERNAL,
    // connect-node: no answer at all). Node 24 sent both, in order.
    const session = http2.connect(ts.url);
    const call = (headers: Record<string, string>) =>
      session.request({
        ":method": "POST",
        ":path": createGroup,
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
    const answer = (req: http2.ClientHttp2Stream) =>
      new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        req.once("response", resolve);
        req.once("close", () => reject(new Error(`reset (${req.rstCode}) with no answer`)));
      });
    try {
      // A call served first, on the same connection (an empty message: INVALID_ARGUMENT).
      const served = call(org.owner.headers);
      served.end(grpcEnvelope(Buffer.alloc(0)));
      expect((await answer(served))["grpc-status"]).toBe("3");
      for (const headers of [{}, { authorization: "Bearer not.a.jwt" }]) {
        const req = call(headers);
        // The first bytes of a message and no END_STREAM: the server answers from the headers.
        req.write(bigCreateGroup(org.uid, 100).subarray(0, 8));
        expect((await answer(req))["grpc-status"]).toBe("16");
        await new Promise((resolve) =>
          req.closed ? resolve(undefined) : req.once("close", resolve),
        );
        // The client is told to stop sending the rest, without an error.
        expect(req.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
      }
    } finally {
      session.close();
    }
  });

  it("REST and Connect answer 401 without reading the body either", async () => {
    const big = JSON.stringify({ name: "big", description: "a".repeat(900 * 1024) });
    for (const [path, type] of [
      [`/iam/v2beta1/groups/${org.uid}`, "application/json"],
      [createGroup, "application/json"],
    ] as const) {
      const res = await fetch(`${ts.url}${path}`, {
        method: "POST",
        headers: { "content-type": type },
        body: path.startsWith("/iam")
          ? big
          : JSON.stringify({ parent: org.uid, group: JSON.parse(big) }),
      });
      expect(res.status).toBe(401);
    }
  });
});

describe("one budget bounds the request bytes all calls hold, on every protocol", () => {
  let ts: TestServer;
  let org: TestOrg;
  const budget = 1024 * 1024;
  beforeAll(async () => {
    ts = await startTestServer({ GATEHOUSE_REQUEST_BUFFER_BYTES: String(budget) });
    org = await ts.makeOrg("budget");
  });
  afterAll(async () => {
    await ts?.close();
  });

  /** Hold about 900 KiB of an unfinished 1 MiB gRPC request on the server. */
  async function holdBytes() {
    const session = http2.connect(ts.url);
    const req = session.request({
      ":method": "POST",
      ":path": createGroup,
      "content-type": "application/grpc",
      te: "trailers",
      ...org.owner.headers,
    });
    req.on("error", () => {});
    const body = bigCreateGroup(org.uid, budget - 1000);
    await new Promise<void>((resolve) => req.write(body.subarray(0, 900 * 1024), () => resolve()));
    return () => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
    };
  }

  const probeBody = 300 * 1024;
  const probes: Record<string, () => Promise<string>> = {
    "lean gRPC": async () =>
      String(
        (await sendGrpc(ts.url, createGroup, org.owner.headers, bigCreateGroup(org.uid, probeBody)))
          .status,
      ),
    "gRPC-Web (router)": async () => {
      const res = await fetch(`${ts.url}${createGroup}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/grpc-web+proto" },
        body: bigCreateGroup(org.uid, probeBody),
      });
      // gRPC-Web's trailers ride at the end of the body.
      const text = Buffer.from(await res.arrayBuffer()).toString("latin1");
      return res.headers.get("grpc-status") ?? /grpc-status:\s*(\d+)/.exec(text)?.[1] ?? "none";
    },
    Connect: async () => {
      const res = await fetch(`${ts.url}${createGroup}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({
          parent: org.uid,
          group: { name: "p", description: "a".repeat(probeBody) },
        }),
      });
      const json = (await res.json()) as { code: string };
      return json.code;
    },
    REST: async () => {
      const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ name: "p", description: "a".repeat(probeBody) }),
      });
      return `${res.status} ${((await res.json()) as { code: number }).code}`;
    },
  };
  const exhausted: Record<string, string> = {
    "lean gRPC": "8",
    "gRPC-Web (router)": "8",
    Connect: "resource_exhausted",
    REST: "503 8",
  };
  const served: Record<string, string> = {
    "lean gRPC": "3",
    "gRPC-Web (router)": "3",
    Connect: "invalid_argument",
    REST: "400 3",
  };

  for (const name of Object.keys(probes)) {
    it(`${name}: refused while another call holds the budget, served once it is free`, async () => {
      const probe = probes[name]!;
      // The baseline: alone, the call is read whole and refused for its long description.
      expect(await probe()).toBe(served[name]);
      const release = await holdBytes();
      // The held bytes reach the server's budget when the server has read them.
      let answer = "";
      for (let i = 0; i < 50 && answer !== exhausted[name]; i++) {
        answer = await probe();
        if (answer !== exhausted[name]) await new Promise((r) => setTimeout(r, 20));
      }
      release();
      expect(answer).toBe(exhausted[name]);
      // Given back when the holder goes.
      for (let i = 0; i < 50 && answer !== served[name]; i++) {
        await new Promise((r) => setTimeout(r, 20));
        answer = await probe();
      }
      expect(answer).toBe(served[name]);
    });
  }
});
