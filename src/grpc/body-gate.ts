import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import { finished } from "node:stream";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest, RawServerBase } from "fastify";
import type { Admission } from "../pipeline/admission.js";
import { budgetExhausted } from "../request-budget.js";
import { rpcPath } from "./rpc-path.js";

/** Options of addBodyGate. */
export interface BodyGateOptions {
  /** The server's call admission (src/pipeline/admission.ts). */
  admission: Admission;
  /** The call's context values, the same object the call is then served with. */
  contextValues: (req: FastifyRequest) => ContextValues;
}

/**
 * Add a hook (before the lean Connect path and the Connect router) that runs call admission
 * (src/pipeline/admission.ts) for every RPC served through fastify (Connect, its GET form,
 * gRPC-Web, gRPC on the router), as the lean gRPC path and REST run it for theirs:
 *
 * - A refused call (a method that needs a token and came without a valid one, or a check
 *   such as a rate limit) never has its body read: the body is replaced by an empty message,
 *   and admission's interceptor refuses the call with admission's error, in the protocol's
 *   own framing.
 * - Every chunk read is charged to the call's budget share and given back once the call has
 *   been answered; a chunk past the budget ends the read with RESOURCE_EXHAUSTED.
 *
 * Both readers of these bodies (connect-node's router and the lean Connect path) take them as
 * an async iterable, which is what the hook replaces.
 */
export function addBodyGate<S extends RawServerBase>(
  app: FastifyInstance<S>,
  opts: BodyGateOptions,
): void {
  // A callback hook, not an async one: every request passes it, and one that is no RPC (a
  // REST call) then costs no promise and no turn of the microtask queue.
  app.addHook("onRequest", (req, reply, done) => {
    const post = req.method === "POST";
    const q = post ? -1 : req.url.indexOf("?");
    const path = q < 0 ? req.url : req.url.slice(0, q);
    if (!(post || req.method === "GET") || !rpcPath.test(path)) return done();
    gate(req as unknown as FastifyRequest, reply as unknown as FastifyReply, post, path).then(
      () => done(),
      done,
    );
  });

  async function gate(
    req: FastifyRequest,
    reply: FastifyReply,
    post: boolean,
    path: string,
  ): Promise<void> {
    const raw = req.raw as unknown as IncomingMessage;
    const given = req.headers.authorization;
    const values = opts.contextValues(req as unknown as FastifyRequest);
    const admitted = await opts.admission.admit({
      rpc: path.slice(1),
      authorization: typeof given === "string" ? given : null,
      requestId: req.id,
      values,
      address: raw.socket?.remoteAddress,
    });
    if (admitted.refused) {
      opts.admission.refuseInChain(values, admitted.refused);
      // The GET form has no body to stand in for.
      if (!post) return;
      const stand = placeholder(
        String(req.headers["content-type"] ?? ""),
        req.headers["content-encoding"],
      );
      Object.defineProperty(raw, Symbol.asyncIterator, {
        writable: true,
        configurable: true,
        value: async function* () {
          if (stand.length > 0) yield stand;
        },
      });
      // Readers trust a declared length before they read (a large one is refused as such).
      raw.headers["content-length"] = String(stand.length);
      return;
    }
    if (!post) return;
    const share = admitted.share;
    let held = 0;
    const release = () => {
      share.give(held);
      held = 0;
    };
    reply.raw.once("close", release);
    const iterate = async function* () {
      let over = false;
      // Not destroyed when the read stops early (see below).
      for await (const chunk of raw.iterator({
        destroyOnReturn: false,
      }) as AsyncIterable<Buffer>) {
        if (!share.take(chunk.length)) {
          over = true;
          break;
        }
        held += chunk.length;
        yield chunk;
      }
      if (!over) return;
      release();
      // The rest is discarded, not held, and the call answered once the client has sent
      // it: an HTTP/1.1 answer before the end of the body would reach the client as a
      // reset connection instead.
      raw.resume();
      if (!raw.readableEnded) await once(raw, "end").catch(() => undefined);
      throw budgetExhausted();
    };
    // Writable: the gRPC-Web text hook wraps it in turn, to decode base64.
    Object.defineProperty(raw, Symbol.asyncIterator, {
      writable: true,
      configurable: true,
      value: iterate,
    });
    // The same read, charged the same way, through the stream's events (bodyReaderOf).
    const read: BodyReader = (readMaxBytes, lengthHint) =>
      readEvents(
        raw,
        readMaxBytes,
        lengthHint,
        (n) => {
          if (!share.take(n)) return false;
          held += n;
          return true;
        },
        release,
      );
    (raw as unknown as Record<symbol, GateReader>)[kReader] = { iterate, read };
  }
}

/**
 * Read a whole request body as connect's readAllBytes reads it from the gate's iterable
 * (`lengthHint`: the Content-Length header): the same bytes, the same errors, the same
 * charges to the budget (`take`, `release` once the budget is exhausted). Through the
 * stream's 'data' and 'end' events: an async iterator over the stream (its end-of-stream
 * watcher, a promise per chunk, the generator's own) was 5-8% of a Connect GetGroup's CPU.
 */
export type BodyReader = (readMaxBytes: number, lengthHint: string | null) => Promise<Uint8Array>;

interface GateReader {
  iterate: () => AsyncGenerator<Buffer>;
  read: BodyReader;
}
const kReader = Symbol("gatehouse.body-gate.reader");

/**
 * The body gate's reader of an admitted request's body (BodyReader), for a path that reads
 * the whole body at once (the lean Connect path); undefined when the body is read otherwise:
 * no gate (a refused call's stand-in body), a hook that wrapped the gate's iterable since
 * (gRPC-Web text decodes what it yields), or a stream already gone (the iterable's own
 * end-of-stream watcher tells that error as it does).
 */
export function bodyReaderOf(raw: object): BodyReader | undefined {
  const r = (raw as Record<symbol, GateReader | undefined>)[kReader];
  if (r === undefined) return undefined;
  const stream = raw as IncomingMessage;
  if (stream[Symbol.asyncIterator] !== r.iterate || stream.destroyed) return undefined;
  return r.read;
}

function readEvents(
  raw: IncomingMessage,
  readMaxBytes: number,
  lengthHint: string | null,
  take: (n: number) => boolean,
  release: () => void,
): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    // connect's parseLengthHint: a length it cannot read is no hint.
    const hint = lengthHint === null ? Number.NaN : Number.parseInt(lengthHint, 10);
    const known = Number.isSafeInteger(hint) && hint >= 0;
    if (known && hint > readMaxBytes) {
      reject(tooLarge(readMaxBytes, hint, true));
      return;
    }
    const chunks: Buffer[] = [];
    let count = 0;
    const stop = () => {
      raw.off("data", onData);
      raw.off("end", onEnd);
      raw.off("error", onError);
      raw.off("close", onClose);
    };
    // An early stop leaves the rest unread, as the iterable's return() does.
    const fail = (err: unknown) => {
      stop();
      raw.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      if (!take(chunk.length)) {
        stop();
        release();
        // The rest is discarded, not held, and the call answered once the client has sent
        // it: an HTTP/1.1 answer before the end of the body would reach the client as a
        // reset connection instead.
        raw.resume();
        const refuse = () => reject(budgetExhausted());
        if (raw.readableEnded) refuse();
        else once(raw, "end").then(refuse, refuse);
        return;
      }
      const total = count + chunk.length;
      if (known && total > hint) {
        fail(
          new ConnectError(
            `protocol error: promised ${hint} bytes, received ${total}`,
            Code.InvalidArgument,
          ),
        );
        return;
      }
      if (!known && total > readMaxBytes) {
        fail(tooLarge(readMaxBytes, total, false));
        return;
      }
      chunks.push(chunk);
      count = total;
    };
    const onEnd = () => {
      stop();
      if (known && count < hint) {
        reject(
          new ConnectError(
            `protocol error: promised ${hint} bytes, received ${count}`,
            Code.InvalidArgument,
          ),
        );
        return;
      }
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, count));
    };
    const onError = (err: unknown) => {
      stop();
      reject(err);
    };
    // Closed before its end without an error: the iterable's watcher says why, in its words.
    const onClose = () => {
      if (raw.readableEnded) return;
      stop();
      finished(raw, (err) => reject(err ?? new Error("Premature close")));
    };
    raw.on("data", onData);
    raw.once("end", onEnd);
    raw.once("error", onError);
    raw.once("close", onClose);
  });
}

/** connect's assertReadMaxBytes error, in its words. */
function tooLarge(readMaxBytes: number, bytes: number, sizeKnown: boolean): ConnectError {
  return new ConnectError(
    sizeKnown
      ? `message size ${bytes} is larger than configured readMaxBytes ${readMaxBytes}`
      : `message size is larger than configured readMaxBytes ${readMaxBytes}`,
    Code.ResourceExhausted,
  );
}

const emptyEnvelope = Buffer.alloc(5);
const jsonEnvelope = Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d]); // "{}"

/**
 * The smallest well-formed request body of a content type: an empty message, so that the call
 * reaches the interceptors (and is refused there) without a byte of the real body.
 */
function placeholder(type: string, encoding: string | string[] | undefined): Buffer {
  const t = type.split(";")[0]!.trim().toLowerCase();
  if (t === "application/json") return compressed(Buffer.from("{}"), encoding);
  if (t === "application/proto") return Buffer.alloc(0);
  if (t === "application/grpc-web-text" || t === "application/grpc-web-text+proto") {
    return Buffer.from(emptyEnvelope.toString("base64"));
  }
  if (t.endsWith("+json")) return jsonEnvelope;
  return emptyEnvelope;
}

function compressed(body: Buffer, encoding: string | string[] | undefined): Buffer {
  if (encoding === "gzip") return gzipSync(body);
  if (encoding === "br") return brotliCompressSync(body);
  return body;
}
