import { once } from "node:events";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupSchema, GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";

// Canaries: each runs upstream connect-node's own handler, WITHOUT our patches, and asserts
// that the upstream behaviour a patch in src/grpc/ works around is still there. When one of
// these fails, upstream behaves: delete the patch its message names (and this canary), after
// checking that the patch's own tests still pass without it. docs/upstream-reports.md has the
// report text for the ones that are upstream bugs.

const getGroup = "/gatehouse.iam.v2beta1.GroupsService/GetGroup";
// Field 1 (uid), length-delimited, with a length varint that never ends: undecodable.
const undecodable = Buffer.from([0x0a, 0xff]);
const handler = connectNodeAdapter({
  routes: (router) =>
    router.service(GroupsService, {
      getGroup: async (req, ctx) => {
        if (req.uid === "colon") {
          throw new ConnectError("name: must not be empty", Code.InvalidArgument);
        }
        if (req.uid === "deadline") {
          // Whether the call's deadline has fired 5 ms into the call.
          await sleep(5);
          return create(GroupSchema, {
            uid: req.uid,
            name: ctx.signal.aborted ? "fired" : "armed",
          });
        }
        return create(GroupSchema, { uid: req.uid, name: "constant" });
      },
    }),
});
let h2: http2.Http2Server;
let h1: http.Server;
let h2Url: string;
let h1Url: string;

beforeAll(async () => {
  h2 = http2.createServer(handler);
  h1 = http.createServer(handler);
  await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => h1.listen(0, "127.0.0.1", r));
  h2Url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
  h1Url = `http://127.0.0.1:${(h1.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => h2.close(r));
  await new Promise((r) => h1.close(r));
});

/** The message of a failed expectation: upstream fixed it, so the patch can go. */
const behaves = (what: string, patch: string) =>
  `upstream connect-node now ${what}: delete the patch ${patch} and this canary`;

describe("upstream connect-node, without our patches", () => {
  it("still answers an undecodable request message INTERNAL, not INVALID_ARGUMENT", async () => {
    const g = await rawGrpc(h2Url, getGroup, {}, grpcEnvelope(undecodable));
    expect(g.grpcStatus, behaves("answers it over gRPC", "src/grpc/request-parse-errors.ts")).toBe(
      String(Code.Internal),
    );
    const c = await fetch(h1Url + getGroup, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: undecodable,
    });
    const body = (await c.json()) as { code?: string; message?: string };
    expect(
      { status: c.status, code: body.code },
      behaves("answers it over Connect", "src/grpc/request-parse-errors.ts"),
    ).toEqual({ status: 500, code: "internal" });
    expect(body.message).toMatch(/^parse binary: /);
  });

  it("still sends grpc-message that grpc-js clients read with %3A in it", async () => {
    const raw = await rawGrpc(
      h2Url,
      getGroup,
      {},
      grpcEnvelope(Buffer.from([0x0a, 5, ...Buffer.from("colon")])),
    );
    const sent = String(raw.trailers["grpc-message"] ?? raw.headers["grpc-message"]);
    // What a grpc-js stub shows its caller.
    const client = new grpc.Client(
      h2Url.slice("http://".length),
      grpc.credentials.createInsecure(),
    );
    const err = await new Promise<grpc.ServiceError>((resolve) =>
      client.makeUnaryRequest(
        getGroup,
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.from([0x0a, 5, ...Buffer.from("colon")]),
        (e) => resolve(e as grpc.ServiceError),
      ),
    );
    client.close();
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(
      err.details,
      behaves(
        `sends a grpc-message grpc-js decodes (it sent ${JSON.stringify(sent)})`,
        "src/grpc/grpc-message-encoding.ts (encodeGrpcMessage and its hook)",
      ),
    ).toBe("name%3A must not be empty");
    expect(sent).toBe("name%3A%20must%20not%20be%20empty");
  });

  it("still refuses gRPC-Web text (application/grpc-web-text) with 415", async () => {
    const res = await fetch(h1Url + getGroup, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1" },
      body: grpcEnvelope(Buffer.alloc(0)).toString("base64"),
    });
    await res.arrayBuffer();
    expect(
      res.status,
      behaves("serves application/grpc-web-text", "src/grpc/grpc-web-text.ts"),
    ).toBe(415);
  });

  it("still makes a call's signal and deadline timer eagerly, read or not", () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    const context = createHandlerContext({
      service: GroupsService,
      method: GroupsService.method.getGroup,
      protocolName: "grpc",
      requestMethod: "POST",
      url: `${h2Url}${getGroup}`,
      timeoutMs: 60_000,
    });
    const armed = timers() - before;
    const made = Object.getOwnPropertyDescriptor(context, "signal");
    context.abort();
    const lazy = behaves(
      "makes a context's signal or deadline timer only when read",
      "CallContext's laziness in src/pipeline/call-context.ts (use createHandlerContext)",
    );
    expect(armed, lazy).toBe(1);
    expect(made && "value" in made && made.value instanceof AbortSignal, lazy).toBe(true);
  });

  it("still turns a deadline past 2^31-1 ms into one of 1 ms", async () => {
    // connect-timeout-ms 2^31: about 24.9 days. Node's timers hold at most 2^31-1 ms and arm
    // a longer one for 1 ms; that timer was armed before the handler's 5 ms sleep, so it has
    // fired by the time the handler looks, unless upstream clamps the deadline.
    const res = await fetch(h1Url + getGroup, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": String(2 ** 31) },
      body: JSON.stringify({ uid: "deadline" }),
    });
    const body = (await res.json()) as { name?: string };
    expect(
      body.name,
      behaves(
        "keeps a deadline past setTimeout's limit",
        "the clamp to maxDeadlineMs (addDeadlineClamp in src/grpc/deadline-clamp.ts, and in src/pipeline/unary-invocation.ts)",
      ),
    ).toBe("fired");
  });

  it("still leaves the fastify plugin's shutdownTimeoutMs timer armed after the app closed", async () => {
    const app = Fastify();
    const opts: Parameters<typeof fastifyConnectPlugin>[1] = {
      routes: (r) => r.service(GroupsService, {}),
      shutdownTimeoutMs: 20,
    };
    await app.register(fastifyConnectPlugin, opts);
    await app.ready();
    // The plugin puts its own linked signal in the options; its timer aborts it.
    const signal = opts.shutdownSignal!;
    await app.close();
    // The app has closed with nothing in flight. Our sleep is armed after the plugin's timer
    // and is ten times longer: the plugin's timer, if still armed, fires first.
    const fired = await Promise.race([
      once(signal, "abort").then(() => true),
      sleep(200).then(() => false),
    ]);
    expect(
      fired,
      behaves(
        "clears its shutdownTimeoutMs timer when the app closes",
        "the cut-off timer of close() in src/server.ts (use the plugin's shutdownTimeoutMs)",
      ),
    ).toBe(true);
  });
});
