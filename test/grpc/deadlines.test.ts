import http2 from "node:http2";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

let srv: TestServer;
let org: TestOrg;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

beforeAll(async () => {
  srv = await startTestServer();
  org = await srv.makeOrg();
  process.on("warning", onWarning);
});
afterAll(async () => {
  process.off("warning", onWarning);
  await srv.close();
});

/** GetGroupRequest{uid} in the protobuf binary format, in a gRPC envelope. */
function getGroupEnvelope(uid: string): Buffer {
  const msg = Buffer.concat([Buffer.from([0x0a, uid.length]), Buffer.from(uid)]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

it("a gRPC deadline beyond what a timer holds is clamped, not turned into 1 ms", async () => {
  const client = http2.connect(srv.url);
  const { status } = await new Promise<{ status: string | undefined }>((resolve, reject) => {
    const req = client.request({
      ":method": "POST",
      ":path": "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-timeout": "99999999H",
      ...org.owner.headers,
    });
    let s: string | undefined;
    req.on("response", (h) => {
      s ??= h["grpc-status"] as string | undefined;
    });
    req.on("trailers", (t) => {
      s = t["grpc-status"] as string | undefined;
    });
    req.on("data", () => {});
    req.on("end", () => resolve({ status: s }));
    req.on("error", reject);
    req.end(getGroupEnvelope(org.uid));
  });
  client.close();
  expect(status).toBe("0");
  expect(warnings.map((w) => w.name)).not.toContain("TimeoutOverflowWarning");
});

it("a Connect deadline beyond what a timer holds is clamped too", async () => {
  const res = await fetch(`${srv.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup`, {
    method: "POST",
    headers: {
      ...org.owner.headers,
      "content-type": "application/json",
      "connect-protocol-version": "1",
      "connect-timeout-ms": "9999999999",
    },
    body: JSON.stringify({ uid: org.uid }),
  });
  expect(res.status).toBe(200);
  expect(warnings.map((w) => w.name)).not.toContain("TimeoutOverflowWarning");
});
