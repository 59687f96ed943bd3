import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { create, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  GetGroupRequestSchema,
  GroupSchema,
  GroupsService,
} from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { type CallInfo, kCallInfo } from "../../src/call-info.js";
import { createDeadlineGate } from "../../src/deadline-gate.js";
import { createErrorInterceptor } from "../../src/interceptors.js";
import {
  createUnaryPipeline,
  requestHeaderOf,
  type UnaryPipeline,
} from "../../src/pipeline/unary-invocation.js";

// The one unary invocation of the lean paths and REST, in process: what it owns (context,
// deadline, shutdown, cancellation, the call's record, error shaping) whatever the framing.
// The paths themselves are held against the Connect router over real connections in
// test/grpc/unary-grpc.test.ts, unary-connect.test.ts and test/rest/.

const domain = "iam.test";
const rpc = "gatehouse.iam.v2beta1.GroupsService/GetGroup";
const getGroup = GroupsService.method.getGroup;

function setUp(impl: object) {
  const logged: { msg: string; fields: Record<string, unknown> }[] = [];
  const shutdown = new AbortController();
  const pipeline: UnaryPipeline = createUnaryPipeline({
    interceptors: [
      createErrorInterceptor(domain, (msg, fields) => logged.push({ msg, fields })),
      createDeadlineGate(),
    ],
    domain,
    log: (msg, fields) => logged.push({ msg, fields }),
    shutdownSignal: shutdown.signal,
  });
  const procedure = pipeline.procedure(GroupsService, getGroup, impl);
  const start = (timeoutMs?: number) => {
    const info: CallInfo = {};
    const values: ContextValues = createContextValues().set(kCallInfo, info);
    const call = pipeline.start(procedure, {
      protocolName: "rest",
      requestMethod: "GET",
      url: "http://127.0.0.1/iam/v2beta1/groups/a",
      header: [["x-request-id", "r1"]],
      values,
      timeoutMs,
    });
    return { call, info };
  };
  return { start, logged, shutdown };
}

const request = (uid = "a"): Message => create(GetGroupRequestSchema, { uid });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the call succeeded");
    },
    (e: unknown) => e as ConnectError,
  );

describe("the unary pipeline", () => {
  it("runs the interceptors around the implementation and records the call", async () => {
    let seen: HandlerContext | undefined;
    const { start } = setUp({
      getGroup: (req: { uid: string }, ctx: HandlerContext) => {
        seen = ctx;
        ctx.responseHeader.set("x-answer", "yes");
        return { uid: req.uid, name: "a group" };
      },
    });
    const { call, info } = start();
    const output = await call.run(() => request("g1"));
    expect(output).toEqual(create(GroupSchema, { uid: "g1", name: "a group" }));
    expect(info).toEqual({ rpc, code: 0 });
    expect(seen?.protocolName).toBe("rest");
    expect(seen?.requestHeader.get("x-request-id")).toBe("r1");
    expect(call.context.responseHeader.get("x-answer")).toBe("yes");
    // Answered: the call's signal fires, as on the Connect router.
    expect(call.context.signal.aborted).toBe(true);
  });

  it("shapes what fails while the message is read into the API error, and logs the cause", async () => {
    const { start, logged } = setUp({ getGroup: () => ({}) });
    const { call, info } = start();
    const err = await failure(
      call.run(() => {
        throw new Error("the disk caught fire");
      }),
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe("Internal error");
    expect(err.details[0]).toMatchObject({ value: { reason: "INTERNAL", domain } });
    expect(info.code).toBe(Code.Internal);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.fields).toMatchObject({ rpc });
    expect(String(logged[0]!.fields.error)).toContain("the disk caught fire");
  });

  it("keeps a deadline past what a timer holds, and refuses one that has passed", async () => {
    const { start } = setUp({
      getGroup: async (_req: unknown, ctx: HandlerContext) => {
        // A deadline of 2^31 ms left unclamped would be a 1 ms timer, armed before this one.
        await sleep(5);
        return { name: ctx.signal.aborted ? "fired" : "armed" };
      },
    });
    const long = start(2 ** 31);
    expect((await long.call.run(() => request())) as unknown).toMatchObject({ name: "armed" });
    const passed = start(0);
    const err = await failure(passed.call.run(() => request()));
    expect(err.code).toBe(Code.DeadlineExceeded);
    expect(passed.info.code).toBe(Code.DeadlineExceeded);
  });

  it("aborts a call still running at shutdown", async () => {
    const { start, shutdown } = setUp({
      getGroup: async (_req: unknown, ctx: HandlerContext) => {
        await once(ctx.signal, "abort");
        throw new ConnectError("stopped", Code.Unavailable);
      },
    });
    const { call, info } = start();
    const running = failure(call.run(() => request()));
    await sleep(0);
    shutdown.abort();
    expect((await running).code).toBe(Code.Unavailable);
    expect(info.code).toBe(Code.Unavailable);
  });

  it("runs nothing for a client that went away while its message was read", async () => {
    let ran = false;
    const { start } = setUp({
      getGroup: () => {
        ran = true;
        return {};
      },
    });
    const { call } = start();
    let read: (m: Message) => void = () => undefined;
    const running = failure(call.run(() => new Promise<Message>((r) => (read = r))));
    const reason = call.cancel();
    expect(reason.code).toBe(Code.Canceled);
    expect(call.context.signal.reason).toBe(reason);
    read(request());
    expect((await running).code).toBe(Code.Canceled);
    expect(ran).toBe(false);
  });

  it("answers a method the implementation lacks UNIMPLEMENTED, as the router does", async () => {
    const { start } = setUp({});
    const { call, info } = start();
    const err = await failure(call.run(() => request()));
    expect(err.code).toBe(Code.Unimplemented);
    expect(info).toEqual({ rpc, code: Code.Unimplemented });
  });

  it("makes a call's Headers only when something reads them, and keeps what is set on them", async () => {
    // undici's Headers checks every name and value as it is built: a call whose access check
    // reads only its Authorization header and whose answer has no header of its own makes none.
    const made: string[] = [];
    const RealHeaders = globalThis.Headers;
    globalThis.Headers = class extends RealHeaders {
      constructor(init?: ConstructorParameters<typeof RealHeaders>[0]) {
        super(init);
        made.push("Headers");
      }
    };
    try {
      const seen: (string | null)[] = [];
      const pipeline = createUnaryPipeline({
        interceptors: [
          (next) => async (req) => {
            seen.push(requestHeaderOf(req, "authorization"), requestHeaderOf(req, "x-twice"));
            const res = await next(req);
            if (req.header === undefined) throw new Error("no request headers");
            return res;
          },
        ],
        domain,
        log: () => undefined,
        shutdownSignal: new AbortController().signal,
      });
      const header: [string, string][] = [
        ["authorization", "Bearer t"],
        ["x-twice", " one "],
        ["x-twice", "two\t"],
      ];
      const start = (
        impl: object,
        interceptor?: Parameters<typeof createUnaryPipeline>[0]["interceptors"][number],
      ) => {
        const p = interceptor
          ? createUnaryPipeline({
              interceptors: [interceptor],
              domain,
              log: () => undefined,
              shutdownSignal: new AbortController().signal,
            })
          : pipeline;
        return p.start(p.procedure(GroupsService, getGroup, impl), {
          protocolName: "grpc",
          requestMethod: "POST",
          url: `/${rpc}`,
          header,
          values: createContextValues().set(kCallInfo, {}),
        });
      };

      // Read without making them: the same values Headers gives.
      const lazy = start({ getGroup: () => ({ name: "g" }) });
      await lazy.run(() => request());
      expect(seen).toEqual(["Bearer t", "one, two"]);
      expect(new RealHeaders(header).get("x-twice")).toBe("one, two");
      expect(lazy.context.madeResponseHeader).toBeUndefined();
      expect(lazy.context.madeResponseTrailer).toBeUndefined();
      // The interceptor above read req.header after the call: that one was made, no other.
      expect(made).toHaveLength(1);
      expect(lazy.context.requestHeader.get("x-twice")).toBe("one, two");
      expect(made).toHaveLength(1);

      // What the implementation and an interceptor set is the answer's.
      made.length = 0;
      const set = start(
        {
          getGroup: (_req: unknown, ctx: HandlerContext) => {
            ctx.responseTrailer.set("x-trailer", "t");
            return {};
          },
        },
        (next) => async (req) => {
          const res = await next(req);
          res.header.set("x-interceptor", "i");
          return res;
        },
      );
      await set.run(() => request());
      expect(set.context.madeResponseHeader?.get("x-interceptor")).toBe("i");
      expect(set.context.madeResponseTrailer?.get("x-trailer")).toBe("t");
      expect(made).toHaveLength(2);
    } finally {
      globalThis.Headers = RealHeaders;
    }
  });
});
