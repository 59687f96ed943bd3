import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, expect, it } from "vitest";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// A deadline reaches the handler: a List whose call has waited past its deadline (here behind
// an interceptor that holds it past it) does not start its query for nobody. The tests wait
// for the interceptors to say they are done rather than for a fixed time, so a loaded machine
// changes how long the tests take, not what they see.

let ts: TestServer;
let org: TestOrg;
let lists = 0;
// What the handler's signal said: the reason it fired with, or that it had not fired.
const signals: { code: Code | "not aborted" }[] = [];
let kept: AbortSignal | undefined;
// Resolved when a call held back by x-test-slow has gone on past the interceptor.
let slowDone: (() => void) | undefined;

/** Resolves when `signal` aborts, or after `ms` (a hang detector, not a measure). */
const abortedOr = (signal: AbortSignal, ms: number) =>
  Promise.race([
    sleep(ms),
    new Promise((r) => signal.addEventListener("abort", r, { once: true })),
  ]);
beforeAll(async () => {
  ts = await startTestServer(
    {},
    {
      interceptors: [
        (next) => async (req) => {
          if (req.header.get("x-test-slow")) {
            // Hold the call past its deadline, then let it go on to the handler: three times
            // the test's 100 ms, which the server counts from before this point, so past it
            // however slow the machine. (Not until its signal fires: the client's
            // cancellation can fire it a moment before the deadline.)
            await sleep(300);
            try {
              return await next(req);
            } finally {
              slowDone?.();
            }
          }
          if (req.header.get("x-test-wait-signal")) {
            // Wait for the call's signal (at most 10 s), and say why it fired.
            const signal = req.signal;
            await abortedOr(signal, 10_000);
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
  const client = groupsProtoClient(ts.port);
  // Connected first, with a call that has time: on a busy machine a 100 ms deadline can run
  // out while the client is still connecting, and then the server never sees the call.
  const fast = new grpc.Metadata();
  fast.set("authorization", org.owner.headers.authorization!);
  const listed = () =>
    new Promise<void>((resolve, reject) =>
      client.listGroups({}, fast, { deadline: Date.now() + 5000 }, (e: grpc.ServiceError | null) =>
        e ? reject(e) : resolve(),
      ),
    );
  await listed();
  const before = lists;
  const md = new grpc.Metadata();
  md.set("authorization", org.owner.headers.authorization!);
  md.set("x-test-slow", "1");
  const passed = new Promise<void>((r) => {
    slowDone = r;
  });
  const err = await new Promise<grpc.ServiceError | null>((resolve) =>
    client.listGroups({}, md, { deadline: Date.now() + 100 }, (e: grpc.ServiceError | null) =>
      resolve(e),
    ),
  );
  expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  // The call went past the interceptor after its deadline, and the handler did not list.
  await passed;
  expect(lists).toBe(before);
  // Without the wait, the same call runs.
  await listed();
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
  // By hand, with grpc-timeout and no client-side deadline: grpc-js would also cancel the call
  // at about the same moment, and on a loaded machine its cancellation can reach the server
  // first, so the signal would fire for the cancellation rather than the deadline.
  const answer = await rawGrpc(
    `http://127.0.0.1:${ts.port}`,
    "/gatehouse.iam.v2beta1.GroupsService/ListGroups",
    {
      authorization: org.owner.headers.authorization!,
      "x-test-wait-signal": "1",
      "grpc-timeout": "1000m",
    },
    grpcEnvelope(new Uint8Array()),
  );
  // (What the server answers after the deadline is no concern of a client that enforces its
  // deadline itself; here, only that the call ended.)
  expect(answer.status).toBe(200);
  await expect.poll(() => signals.length, { timeout: 3000 }).toBe(1);
  // The deadline, not the 10 s fallback and not a cancellation.
  expect(signals[0]!.code).toBe(Code.DeadlineExceeded);
});

it("fires the signal of an answered call as complete", async () => {
  kept = undefined;
  expect(await callWith(ts.port, { "x-test-keep-signal": "1" }, 60_000)).toBeNull();
  await expect.poll(() => kept?.aborted, { timeout: 3000 }).toBe(true);
  expect(ConnectError.from(kept!.reason).code).toBe(Code.Canceled);
});
