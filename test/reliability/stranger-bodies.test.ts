import http2 from "node:http2";
import { afterAll, beforeAll, expect, it } from "vitest";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// Issue 35 N2: a stranger with no token held the shared request-body budget with slow bodies
// to the public STS Exchange, and 16 of 20 owner calls with a body were refused (429/503).
// Calls anyone may make are charged to a budget of their own, bounded per client address,
// so the owner's calls are refused no more often during the stranger's hold than before it.

const budget = 8 * 1024 * 1024;
const exchange = "/gatehouse.sts.v1.SecurityTokenService/Exchange";
const createGroup = "/gatehouse.iam.v2beta1.GroupsService/CreateGroup";

let ts: TestServer;
let org: TestOrg;
beforeAll(async () => {
  ts = await startTestServer({ GATEHOUSE_REQUEST_BUFFER_BYTES: String(budget) });
  org = await ts.makeOrg("owner");
});
afterAll(async () => {
  await ts?.close();
});

/**
 * The stranger: `streams` slow unfinished bodies to the STS exchange over `sessions` HTTP/2
 * connections, on the lean gRPC path, Connect and REST alike, each declaring a large body and
 * sending 16 KiB at a time. A stream the server refuses is replaced at once, so every byte the
 * server frees is taken again. Returns a function that ends the hold.
 */
function holdStrangerBodies(sessions: number, streams: number): () => void {
  let stopped = false;
  const open = Array.from({ length: sessions }, () => http2.connect(ts.url));
  for (const s of open) s.on("error", () => undefined);
  const kinds = [
    { path: exchange, type: "application/grpc", head: grpcEnvelope(Buffer.alloc(0)) },
    { path: exchange, type: "application/proto", head: Buffer.alloc(0) },
    { path: "/sts/exchange", type: "application/json", head: Buffer.from('{"subjectToken":"') },
  ];
  const start = (i: number) => {
    if (stopped) return;
    const session = open[i % sessions]!;
    if (session.destroyed || session.closed) return;
    const kind = kinds[i % kinds.length]!;
    const head = Buffer.from(kind.head);
    // gRPC: the envelope declares a 1,000,000-byte message that never finishes arriving.
    if (kind.type === "application/grpc") head.writeUInt32BE(1_000_000, 1);
    const req = session.request({
      ":method": "POST",
      ":path": kind.path,
      "content-type": kind.type,
      te: "trailers",
    });
    req.on("error", () => undefined);
    req.on("data", () => undefined);
    req.once("close", () => setTimeout(() => start(i), 20));
    req.write(head);
    let sent = 0;
    const chunk = Buffer.alloc(16 * 1024, "a");
    const more = () => {
      if (stopped || req.closed || sent >= 900 * 1024) return;
      sent += chunk.length;
      req.write(chunk, () => setTimeout(more, 5));
    };
    more();
  };
  for (let i = 0; i < streams; i++) start(i);
  return () => {
    stopped = true;
    for (const s of open) s.destroy();
  };
}

/** A 48 KiB description: served, the owner's call is refused as INVALID_ARGUMENT. */
const description = "a".repeat(48 * 1024);

/** One owner call with a body, by protocol in turn: whether the budget refused it. */
async function ownerCallRefusedForBytes(i: number): Promise<boolean> {
  switch (i % 3) {
    case 0: {
      const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ name: `g${i}`, description }),
      });
      await res.arrayBuffer();
      expect([400, 429, 503]).toContain(res.status);
      return res.status !== 400;
    }
    case 1: {
      const res = await fetch(`${ts.url}${createGroup}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ parent: org.uid, group: { name: `g${i}`, description } }),
      });
      const { code } = (await res.json()) as { code: string };
      expect(["invalid_argument", "resource_exhausted", "unavailable"]).toContain(code);
      return code !== "invalid_argument";
    }
    default: {
      // CreateGroupRequest { parent (1), group (2) { name (2), description (3) } } by hand.
      const group = Buffer.concat([
        field(2, Buffer.from(`g${i}`)),
        field(3, Buffer.from(description)),
      ]);
      const message = Buffer.concat([field(1, Buffer.from(org.uid)), field(2, group)]);
      const answer = await rawGrpc(ts.url, createGroup, org.owner.headers, grpcEnvelope(message));
      expect(["3", "8", "14"]).toContain(answer.grpcStatus);
      return answer.grpcStatus !== "3";
    }
  }
}

/** A length-delimited protobuf field. */
function field(n: number, value: Buffer): Buffer {
  const len: number[] = [];
  let v = value.length;
  while (v > 0x7f) {
    len.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  len.push(v);
  return Buffer.concat([Buffer.from([(n << 3) | 2, ...len]), value]);
}

/** A stranger's own small exchange: whether the server refused it for bytes held. */
async function strangerRefusedForBytes(): Promise<boolean> {
  const body = Buffer.from(JSON.stringify({ subjectToken: "x".repeat(200 * 1024) }));
  const res = await fetch(`${ts.url}/sts/exchange`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  await res.arrayBuffer();
  return res.status === 503 || res.status === 429;
}

async function refusals(calls: number): Promise<number> {
  let refused = 0;
  for (let i = 0; i < calls; i++) if (await ownerCallRefusedForBytes(i)) refused++;
  return refused;
}

it("a stranger's slow public bodies do not make an owner's calls fail", {
  timeout: 60_000,
}, async () => {
  const calls = 21;
  const before = await refusals(calls);
  // Enough to hold the whole budget twice over: 16 connections, 160 streams of 900 KiB.
  const release = holdStrangerBodies(16, 160);
  try {
    // The hold is in place once the stranger's own next call is refused for bytes held.
    let held = false;
    for (let i = 0; i < 100 && !held; i++) {
      held = await strangerRefusedForBytes();
      if (!held) await new Promise((r) => setTimeout(r, 100));
    }
    expect(held, "the stranger's bodies hold what they can").toBe(true);
    const during = await refusals(calls);
    console.log(
      `owner calls refused for bytes held: ${before}/${calls} before, ${during}/${calls} ` +
        "during the stranger's hold",
    );
    expect(during).toBeLessThanOrEqual(before);
  } finally {
    release();
  }
});
