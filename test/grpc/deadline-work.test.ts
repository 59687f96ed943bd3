import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// A deadline reaches the handler: a List whose call has waited past its deadline (here behind
// a slow interceptor) does not start its query for nobody.

let ts: TestServer;
let org: TestOrg;
let lists = 0;
beforeAll(async () => {
  ts = await startTestServer(
    {},
    {
      interceptors: [
        (next) => async (req) => {
          if (req.header.get("x-test-slow")) await sleep(300);
          return next(req);
        },
      ],
    },
  );
  org = await ts.makeOrg("deadlines");
  const listGroups = ts.store.listGroups.bind(ts.store);
  ts.store.listGroups = (q) => {
    lists++;
    return listGroups(q);
  };
});
afterAll(() => ts.close());

type Unary = (
  req: unknown,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (e: grpc.ServiceError | null) => void,
) => void;

function groupsProtoClient(port: number) {
  const def = protoLoader.loadSync("gatehouse/iam/v2beta1/groups.proto", {
    includeDirs: ["proto", "node_modules/google-proto-files"],
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    gatehouse: { iam: { v2beta1: { GroupsService: grpc.ServiceClientConstructor } } };
  };
  const client = new pkg.gatehouse.iam.v2beta1.GroupsService(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  );
  return client as unknown as grpc.Client & { listGroups: Unary };
}

it("stops a List whose deadline passed before it began, on gRPC", async () => {
  const client = groupsProtoClient(ts.port);
  const md = new grpc.Metadata();
  md.set("authorization", org.owner.headers.authorization!);
  md.set("x-test-slow", "1");
  const err = await new Promise<grpc.ServiceError | null>((resolve) =>
    client.listGroups({}, md, { deadline: Date.now() + 100 }, (e: grpc.ServiceError | null) =>
      resolve(e),
    ),
  );
  expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  await sleep(400);
  expect(lists).toBe(0);
  // Without the wait, the same call runs.
  const fast = new grpc.Metadata();
  fast.set("authorization", org.owner.headers.authorization!);
  await new Promise<void>((resolve, reject) =>
    client.listGroups({}, fast, { deadline: Date.now() + 5000 }, (e: grpc.ServiceError | null) =>
      e ? reject(e) : resolve(),
    ),
  );
  expect(lists).toBe(1);
  client.close();
});
