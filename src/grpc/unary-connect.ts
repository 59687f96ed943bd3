import type { ConnectError, ContextValues } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest, RawServerBase } from "fastify";
import { connectJson, createJsonWriter, type JsonWriter } from "../json/message-json.js";
import { headerPairs } from "../pipeline/call-context.js";
import {
  compressMinBytes,
  connectErrorJson,
  connectHttpStatus,
  negotiateCompression,
  readAllBytes,
} from "../pipeline/connect-protocol.js";
import type { UnaryPipeline } from "../pipeline/unary-invocation.js";
import type { ServiceRegistration } from "../service-registration.js";
import { bodyReaderOf } from "./body-gate.js";
import { connectTimeoutMs } from "./deadline-clamp.js";
import { type LeanMethod, leanMethods, parseRequest } from "./lean-calls.js";

/** Options of addUnaryConnect. */
export interface UnaryConnectOptions {
  /** The implementations the Connect router serves. */
  registrations: readonly ServiceRegistration[];
  /** The server's unary pipeline: context, deadline, shutdown, interceptors, errors. */
  pipeline: UnaryPipeline;
  /** The router's per-request context values (they carry the request's CallInfo). */
  contextValues: (req: FastifyRequest) => ContextValues;
  /** Request messages at most this large, after decompression (API.md "Limits"). */
  readMaxBytes: number;
  /** ErrorInfo.domain of the errors this layer raises itself. */
  domain: string;
}

interface ConnectMethod extends LeanMethod {
  /** Writes the answer as JSON, Timestamps with their millisecond fraction. */
  readonly writeJson: JsonWriter;
}

/**
 * A lean path for unary Connect calls (the protocol connect-web speaks), the counterpart of
 * the lean gRPC path: a POST to a unary method with `application/json` or `application/proto`
 * is answered by this hook, before fastify routes it to the Connect router, without the
 * router's universal request and response, its async-iterable body, or the app's hooks that
 * rewrite the router's answers on their way out (the JSON one re-parsed every answer to give
 * its Timestamps their millisecond fraction: here they get it once, before it is written).
 * The call itself (context, deadline, shutdown, interceptors, implementation, errors) is the
 * unary pipeline's (src/pipeline/unary-invocation.ts); this hook reads Connect's body and
 * writes its answer.
 *
 * The answers are the router's answers as those hooks shape them (test/grpc/unary-connect.test.ts
 * holds the two side by side): the same interceptors, implementations and serializers, the
 * same compression both ways, status codes and error JSON with its details. A request message
 * that does not decode is INVALID_ARGUMENT (HTTP 400); an error raised below the
 * interceptors gets the ErrorInfo every error carries. The GET form, streams, other content
 * types and malformed timeouts stay with the router.
 *
 * Register after CORS (whose headers the answer keeps) and before the hooks that rewrite the
 * router's answers: the calls this hook answers never reach them.
 */
export function addUnaryConnect<S extends RawServerBase>(
  app: FastifyInstance<S>,
  opts: UnaryConnectOptions,
): void {
  const methods = new Map<string, ConnectMethod>();
  for (const [path, m] of leanMethods(opts.registrations, opts.pipeline, opts.readMaxBytes)) {
    methods.set(path, { ...m, writeJson: createJsonWriter(m.method.output, connectJson) });
  }

  // A callback hook, not an async one: every request passes it (a REST call too), and an
  // async hook costs each of them a promise and a turn of the microtask queue. Once `serve`
  // has answered, done() finds the reply sent and fastify goes no further.
  app.addHook("onRequest", (req, reply, done) => {
    if (req.method !== "POST") return done();
    const m = methods.get(req.url);
    if (!m) return done();
    const type = req.headers["content-type"];
    if (type !== "application/json" && type !== "application/proto") return done();
    const timeout = req.headers["connect-timeout-ms"];
    let timeoutMs: number | undefined;
    if (timeout !== undefined) {
      timeoutMs = typeof timeout === "string" ? connectTimeoutMs(timeout) : undefined;
      // A malformed one is the router's to refuse, in its words.
      if (timeoutMs === undefined) return done();
    }
    serve(req as unknown as FastifyRequest, reply as unknown as FastifyReply, m, {
      binary: type === "application/proto",
      timeoutMs,
    }).then(() => done(), done);
  });

  async function serve(
    req: FastifyRequest,
    reply: FastifyReply,
    m: ConnectMethod,
    call: { binary: boolean; timeoutMs: number | undefined },
  ): Promise<FastifyReply> {
    reply.header("x-request-id", req.id);
    const c = opts.pipeline.start(m, {
      protocolName: "connect",
      requestMethod: "POST",
      url: `${req.protocol}://${req.host}${req.url}`,
      header: headerPairs(req.headers),
      values: opts.contextValues(req),
      timeoutMs: call.timeoutMs,
    });
    const context = c.context;
    // The client went away before its answer.
    const res = reply.raw;
    const onClose = () => {
      if (!res.writableEnded) c.cancel();
    };
    res.once("close", onClose);
    const compression = negotiateCompression(
      req.headers["content-encoding"] as string | undefined,
      req.headers["accept-encoding"] as string | undefined,
      "Accept-Encoding",
    );
    let status = 200;
    let body: Uint8Array;
    try {
      const output = await c.run(async () => {
        if (compression.error) throw compression.error;
        const lengthHint = (req.headers["content-length"] as string | undefined) ?? null;
        // The body gate's own reader, where it has one: the same read without an iterator.
        const read = bodyReaderOf(req.raw);
        let bytes = read
          ? await read(opts.readMaxBytes, lengthHint)
          : await readAllBytes(req.raw as AsyncIterable<Uint8Array>, opts.readMaxBytes, lengthHint);
        if (compression.request)
          bytes = await compression.request.decompress(bytes, opts.readMaxBytes);
        return parseRequest(m, call.binary, bytes, opts.domain);
      });
      body = call.binary
        ? m.serialization.getO(true).serialize(output as never)
        : Buffer.from(m.writeJson(output));
      reply.header("content-type", call.binary ? "application/proto" : "application/json");
    } catch (e) {
      // The API error, as the pipeline shaped it.
      const err = e as ConnectError;
      status = connectHttpStatus(err.code);
      reply.header("content-type", "application/json");
      err.metadata.forEach((v, k) => {
        reply.header(k, v);
      });
      body = connectErrorJson(err);
    } finally {
      res.off("close", onClose);
    }
    context.madeResponseHeader?.forEach((v, k) => {
      reply.header(k, v);
    });
    context.madeResponseTrailer?.forEach((v, k) => {
      reply.header(`trailer-${k}`, v);
    });
    if (compression.response && body.byteLength >= compressMinBytes) {
      body = await compression.response.compress(body);
      reply.header("content-encoding", compression.response.name);
    }
    return reply.code(status).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }
}
