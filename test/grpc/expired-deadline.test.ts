import type { Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type LeanPair, startLeanPair } from "../helpers/lean-pair.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import type { TestOrg } from "../helpers/test-server.js";

// issue 24: a deadline that has already passed (`grpc-timeout: 0n`) was answered OK after
// running the call. It must be DEADLINE_EXCEEDED, and the call must not run, on every path.

const ran: string[] = [];
const spy: Interceptor = (next) => async (req) => {
  ran.push(req.header.get("x-request-id") ?? "");
  return next(req);
};

let pair: LeanPair;
let org: TestOrg;

beforeAll(async () => {
  pair = await startLeanPair(spy);
  org = await pair.lean.makeOrg();
});
afterAll(async () => {
  await pair?.close();
});

/** GetGroupRequest{uid} in the protobuf binary format, in a gRPC envelope. */
const getGroup = (uid: string) =>
  grpcEnvelope(Buffer.concat([Buffer.from([0x0a, uid.length]), Buffer.from(uid)]));

const paths = () => ({
  lean: pair.lean.url,
  router: pair.routerUrl,
});

for (const which of ["lean", "router"] as const) {
  for (const timeout of ["0n", "0S", "0H"]) {
    it(`${which}: grpc-timeout ${timeout} is DEADLINE_EXCEEDED, and the call does not run`, async () => {
      const reqId = `expired-${which}-${timeout}`;
      const answer = await rawGrpc(
        paths()[which],
        "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
        { "grpc-timeout": timeout, "x-request-id": reqId, ...org.owner.headers },
        getGroup(org.uid),
      );
      expect(answer.grpcStatus).toBe("4");
      expect(ran).not.toContain(reqId);
    });
  }
  it(`${which}: the same call with time left runs and answers OK (the baseline)`, async () => {
    const reqId = `alive-${which}`;
    const answer = await rawGrpc(
      paths()[which],
      "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
      { "grpc-timeout": "10S", "x-request-id": reqId, ...org.owner.headers },
      getGroup(org.uid),
    );
    expect(answer.grpcStatus).toBe("0");
    expect(ran).toContain(reqId);
  });
}
