import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { StreamTaker } from "../one-port.js";
import type { Admission } from "../pipeline/admission.js";
import { headerPairs } from "../pipeline/call-context.js";
import {
  compressMinBytes,
  encodeEnvelope,
  envelopeCompress,
  envelopeDecompress,
  negotiateCompression,
} from "../pipeline/connect-protocol.js";
import { requestIdOf } from "../pipeline/request-log.js";
import type { UnaryPipeline } from "../pipeline/unary-invocation.js";
import { type BudgetShare, budgetExhausted } from "../request-budget.js";
import type { ServiceRegistration } from "../service-registration.js";
import { grpcTimeoutMs } from "./deadline-clamp.js";
import { encodeGrpcMessage } from "./grpc-message-encoding.js";
import { type LeanMethod, leanMethods, parseRequest } from "./lean-calls.js";
import { statusTrailers } from "./status-trailers.js";

/** Options of createUnaryGrpc. */
export interface UnaryGrpcOptions {
  /** The implementations the Connect router serves. */
  registrations: readonly ServiceRegistration[];
  /** The server's unary pipeline: context, deadline, shutdown, interceptors, errors. */
  pipeline: UnaryPipeline;
  /** Messages at most this large, after decompression (API.md "Limits"). */
  readMaxBytes: number;
  /** ErrorInfo.domain of the errors this layer raises itself. */
  domain: string;
  /** Per-call values (the call info: connection and request id). */
  contextValues: (stream: ServerHttp2Stream, requestId: string) => ContextValues;
  /** The server's call admission (src/pipeline/admission.ts). */
  admission: Admission;
  /** The request log line of a call, as every other request has one (request-log.ts). */
  log: (fields: { reqId: string; rpc: string; code: Code | 0; durationMs: number }) => void;
}

/**
 * A lean path for unary gRPC calls on the one port (the design (b)): an HTTP/2 stream
 * whose request is binary gRPC to a unary method (content type `application/grpc` or
 * `application/grpc+proto`, a well-formed `grpc-timeout` or none) is answered here, straight
 * from the stream, without fastify's request and reply objects or connect-node's
 * async-iterable pipeline: that pipeline keeps about 25 kB of every call past a scavenge
 * (bench/RESULTS.md), and made gRPC the slowest protocol on the one port. The call itself
 * (context, deadline, shutdown, interceptors, implementation, errors) is the unary pipeline's
 * (src/pipeline/unary-invocation.ts); this file reads gRPC's framing and writes its answer.
 *
 * Everything else (streams, gRPC-Web, JSON messages, gRPC over HTTP/1.1, unknown methods,
 * malformed timeouts) goes to the Connect router as before. The answers are the router's
 * answers, as its hooks on the app shape them (test/grpc/unary-grpc.test.ts holds the two
 * side by side): the same interceptors and implementations, the same status with its
 * details, the same errors for frames, sizes, encodings and messages that do not decode.
 * Errors go out trailers-only, which the gRPC spec allows (grpc-js and buf curl are tested on it).
 */
export function createUnaryGrpc(opts: UnaryGrpcOptions): StreamTaker {
  // The taker returns false, having touched nothing, for every stream it does not serve.
  const methods = leanMethods(opts.registrations, opts.pipeline, opts.readMaxBytes);

  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const m = methods.get(headers[":path"] as string);
    if (!m) return false;
    const type = headers["content-type"];
    if (type !== "application/grpc" && type !== "application/grpc+proto") return false;
    const timeout = headers["grpc-timeout"];
    let timeoutMs: number | undefined;
    if (timeout !== undefined) {
      timeoutMs = grpcTimeoutMs(timeout as string);
      // A malformed one is the router's to refuse, in its words.
      if (timeoutMs === undefined) return false;
    }
    serve(stream, headers, m, timeoutMs);
    return true;
  };

  function serve(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    m: LeanMethod,
    timeoutMs: number | undefined,
  ): void {
    const started = performance.now();
    const requestId = requestIdOf(headers["x-request-id"]);
    const call = opts.pipeline.start(m, {
      protocolName: "grpc",
      requestMethod: "POST",
      url: `/${m.rpc}`,
      header: headerPairs(headers),
      values: opts.contextValues(stream, requestId),
      timeoutMs,
    });
    const context = call.context;
    let done = false;
    // The client went away (RST_STREAM, a closed connection) before its answer.
    const onClose = () => {
      if (done) return;
      finish(call.cancel().code);
    };
    stream.once("close", onClose);
    // Node documents state and protocol errors of a stream as "error" events on it; the call
    // ends through "close" either way, and an unheard "error" would take the process down.
    stream.on("error", ignore);
    const finish = (code: Code | 0) => {
      done = true;
      stream.off("close", onClose);
      opts.log({
        reqId: requestId,
        rpc: m.rpc,
        code,
        durationMs: performance.now() - started,
      });
    };
    const compression = negotiateCompression(
      headers["grpc-encoding"] as string | undefined,
      headers["grpc-accept-encoding"] as string | undefined,
      "grpc-accept-encoding",
    );
    const answer = (message: Uint8Array | undefined, err: ConnectError | undefined) => {
      if (done) return;
      finish(err ? err.code : 0);
      if (stream.destroyed) return;
      try {
        write(message, err);
      } catch {
        // The stream went away while it was being answered.
        stream.destroy();
      }
    };
    const write = (message: Uint8Array | undefined, err: ConnectError | undefined) => {
      const head: http2.OutgoingHttpHeaders = {
        ":status": 200,
        "x-request-id": requestId,
        "content-type": "application/grpc+proto",
      };
      if (compression.response) head["grpc-encoding"] = compression.response.name;
      context.madeResponseHeader?.forEach((v, k) => {
        head[k] = v;
      });
      if (err) {
        // Trailers-only, as the gRPC spec allows for an error: the status rides on the one
        // HEADERS frame, which ends the stream.
        context.madeResponseTrailer?.forEach((v, k) => {
          head[k] = v;
        });
        Object.assign(head, statusTrailers(err));
        head["grpc-message"] = encodeGrpcMessage(err.rawMessage);
        stream.respond(head, { endStream: true });
        // An answer before the whole request arrived (a refused size, a second message, a
        // call refused from its headers): the rest is not read. RST_STREAM(NO_ERROR) tells the
        // client to stop sending it, once the HEADERS frame has been written. Submitted in the
        // same tick, on Node 22 and 26 the reset wins: nghttp2 no longer sends the HEADERS (the
        // stream is closing) and the client sees a bare RST_STREAM, grpc-js as INTERNAL and
        // connect-node as no answer at all. It shows when the call is refused with no I/O
        // (no token, a malformed one, an unknown kid) on a connection that served a call
        // before; Node 24 writes the HEADERS first. A check-phase callback runs after the
        // session's own write, which is scheduled as a native immediate.
        if (!stream.readableEnded) setImmediate(resetUnread, stream);
        return;
      }
      const trailers: http2.OutgoingHttpHeaders = { "grpc-status": "0" };
      context.madeResponseTrailer?.forEach((v, k) => {
        trailers[k] = v;
      });
      const response = compression.response;
      if (!response || message!.length < compressMinBytes) {
        endWithTrailers(stream, head, encodeEnvelope(0, message!), trailers);
        return;
      }
      envelopeCompress({ flags: 0, data: message! }, response, compressMinBytes).then(
        (env) => endWithTrailers(stream, head, encodeEnvelope(env.flags, env.data), trailers),
        () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR),
      );
    };

    // A call that needs a token and came without a valid one never has its body read: the
    // interceptors refuse it, as ever, on an empty message (issue 23: bodies were buffered
    // first). An encoding the server does not know: refused before the message is read, as
    // connect does.
    const authorization = headers.authorization;
    call
      .run(async () => {
        // Before the token check, as the router orders them: an unknown encoding is
        // UNIMPLEMENTED for every caller (test/helpers/differential-property.ts).
        if (compression.error) throw compression.error;
        const admitted = await opts.admission.admit({
          rpc: m.rpc,
          authorization: typeof authorization === "string" ? authorization : null,
          requestId,
          values: context.values,
          address: stream.session?.socket?.remoteAddress,
        });
        let envelope: { flags: number; data: Uint8Array } = emptyEnvelope;
        // Refused: admission's interceptor refuses the call on an empty message.
        if (admitted.refused) opts.admission.refuseInChain(context.values, admitted.refused);
        else envelope = await readMessage(stream, opts.readMaxBytes, admitted.share);
        const { data } = await envelopeDecompress(envelope, compression.request, opts.readMaxBytes);
        return parseRequest(m, true, data, opts.domain);
      })
      .then(
        (output) => answer(m.serialization.getO(true).serialize(output as never), undefined),
        (err: ConnectError) => answer(undefined, err),
      );
  }
}

const emptyEnvelope = { flags: 0, data: new Uint8Array(0) };

function ignore(): void {}

/** RST_STREAM(NO_ERROR) for a stream answered in full whose request is still coming. */
function resetUnread(stream: ServerHttp2Stream): void {
  if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/**
 * Answer a stream: headers, the message, then trailers. Out here, not inside the call's
 * closures: the listener lives as long as the stream, and a closure made inside serve() would
 * keep the whole call (context, headers, message) alive with it, past scavenges.
 */
function endWithTrailers(
  stream: ServerHttp2Stream,
  head: http2.OutgoingHttpHeaders,
  body: Uint8Array,
  trailers: http2.OutgoingHttpHeaders,
): void {
  stream.respond(head, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(body);
}

/**
 * Read the one length-prefixed message of a unary call, refusing what connect's router
 * refuses, with its codes and words: a message over `readMaxBytes` (before any of it is
 * buffered), a second message, a frame cut short, no message at all.
 */
function readMessage(
  stream: ServerHttp2Stream,
  readMaxBytes: number,
  budget: BudgetShare,
): Promise<{ flags: number; data: Uint8Array }> {
  let have = 0;
  // What this read charged the budget is given back once it has its message, or has failed.
  const giveBack = () => budget.give(have);
  return new Promise<{ flags: number; data: Uint8Array }>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let need = -1; // the whole first envelope's size, once its prefix has arrived
    const stop = (err: ConnectError) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("aborted", onAborted);
      stream.resume();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      if (!budget.take(chunk.length)) {
        stop(budgetExhausted());
        return;
      }
      chunks.push(chunk);
      have += chunk.length;
      if (need < 0 && have >= 5) {
        const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        const length = head.readUInt32BE(1);
        if (length > readMaxBytes) {
          stop(
            new ConnectError(
              `message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`,
              Code.ResourceExhausted,
            ),
          );
          return;
        }
        need = 5 + length;
      }
      if (need >= 0 && have >= need + 5) {
        stop(
          new ConnectError(
            "protocol error: received extra input message for unary method",
            Code.Unimplemented,
          ),
        );
      }
    };
    const onEnd = () => {
      stream.off("data", onData);
      stream.off("aborted", onAborted);
      if (have === 0) {
        reject(
          new ConnectError(
            "protocol error: missing input message for unary method",
            Code.Unimplemented,
          ),
        );
        return;
      }
      if (need < 0 || have !== need) {
        reject(new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument));
        return;
      }
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, have);
      resolve({ flags: all[0]!, data: all.subarray(5) });
    };
    const onAborted = () => stop(new ConnectError("the call was cancelled", Code.Canceled));
    // The body may have ended while the call was being authenticated.
    if (stream.readableEnded) {
      onEnd();
      return;
    }
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.once("aborted", onAborted);
  }).finally(giveBack);
}
