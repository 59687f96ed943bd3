import { afterAll, beforeAll, expect, it } from "vitest";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

let org: TestOrg;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

const srv = useTestServer();
beforeAll(async () => {
  org = await srv.makeOrg();
  process.on("warning", onWarning);
});
afterAll(async () => {
  process.off("warning", onWarning);
});

/** GetGroupRequest{uid} in the protobuf binary format, in a gRPC envelope. */
const getGroupEnvelope = (uid: string) =>
  grpcEnvelope(Buffer.concat([Buffer.from([0x0a, uid.length]), Buffer.from(uid)]));

it("a gRPC deadline beyond what a timer holds is clamped, not turned into 1 ms", async () => {
  const { grpcStatus } = await rawGrpc(
    srv.url,
    "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    { "grpc-timeout": "99999999H", ...org.owner.headers },
    getGroupEnvelope(org.uid),
  );
  expect(grpcStatus).toBe("0");
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
