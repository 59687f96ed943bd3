import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// A deadline reaches the handler: a List whose call has waited past its deadline (here behind
// a slow interceptor) does not start its query for nobody.

let ts: TestServer;
let org: TestOrg;
let lists = 0;
// What the handler's signal said: the reason it fired with, or that it had not fired.
const signals: { code: Code | "not aborted" }[] = [];
let kept: AbortSignal | undefined;
beforeAll(async () => {
  ts = await startTestServer(
    {},
    {
      interceptors: [
        (next) => async (req) => {
          if (req.header.get("x-test-slow")) await sleep(300);
          if (req.header.get("x-test-wait-signal")) {
            // Wait for the call's signal, at most 2 s, and say why it fired.
            const signal = req.signal;
            await Promise.race([
              sleep(2000),
              new Promise((r) => signal.addEventListener("abort", r, { once: true })),
            ]);
            signals.push({
              code: signal.aborted ? ConnectError.from(signal.reason).code : "not aborted",
            });
          }
          if (req.header.get("x-test-keep-signal")) kept = req.signal;
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
  const before = lists;
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
  expect(lists).toBe(before);
  // Without the wait, the same call runs.
  const fast = new grpc.Metadata();
  fast.set("authorization", org.owner.headers.authorization!);
  await new Promise<void>((resolve, reject) =>
    client.listGroups({}, fast, { deadline: Date.now() + 5000 }, (e: grpc.ServiceError | null) =>
      e ? reject(e) : resolve(),
    ),
  );
  expect(lists).toBe(before + 1);
  client.close();
});

function callWith(port: number, headers: Record<string, string>, deadlineMs: number) {
  const client = groupsProtoClient(port);
  const md = new grpc.Metadata();
  md.set("authorization", org.owner.headers.authorization!);
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  return new Promise<grpc.ServiceError | null>((resolve) =>
    client.listGroups(
      {},
      md,
      { deadline: Date.now() + deadlineMs },
      (e: grpc.ServiceError | null) => {
        client.close();
        resolve(e);
      },
    ),
  );
}

it("fires the handler's signal at the deadline, on gRPC", async () => {
  signals.length = 0;
  // Long enough for the call to start on a loaded machine: a call whose deadline passes
  // before it runs is refused without running (test/grpc/expired-deadline.test.ts).
  const err = await callWith(ts.port, { "x-test-wait-signal": "1" }, 1000);
  expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  await expect.poll(() => signals.length, { timeout: 3000 }).toBe(1);
  // The deadline, not the 2 s fallback and not the client's cancellation.
  expect(signals[0]!.code).toBe(Code.DeadlineExceeded);
});

it("fires the signal of an answered call as complete", async () => {
  kept = undefined;
  expect(await callWith(ts.port, { "x-test-keep-signal": "1" }, 60_000)).toBeNull();
  await expect.poll(() => kept?.aborted, { timeout: 3000 }).toBe(true);
  expect(ConnectError.from(kept!.reason).code).toBe(Code.Canceled);
});
