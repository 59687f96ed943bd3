import type { ServerResponse } from "node:http";
import { Code, type ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, RawServerBase } from "fastify";
import { connectCodeOf, connectErrorJson } from "../pipeline/connect-protocol.js";
import { rpcPath } from "./rpc-path.js";
import { protocolError, statusTrailers } from "./status-trailers.js";

/**
 * connect-es 2.1 answers a request message it cannot decode with INTERNAL (`parse binary:
 * ...`, thrown before any interceptor runs): HTTP 500 on the Connect protocol, grpc-status 13
 * on gRPC. A malformed message is the client's mistake, INVALID_ARGUMENT, as connect-go
 * answers it. This module rewrites those answers, and only those, on their way out; the
 * message names no more than the library's did. Server-side, "parse binary" only ever comes
 * from the request: the response is serialized, not parsed.
 */
const parseFailure = "parse binary: ";

/** The API error a client gets for a request message that cannot be decoded. */
export function requestParseError(message: string, domain: string): ConnectError | undefined {
  if (!message.startsWith(parseFailure)) return undefined;
  return protocolError(
    Code.InvalidArgument,
    `the request message cannot be decoded: ${message.slice(parseFailure.length)}`,
    domain,
  );
}

/**
 * The gRPC half: rewrite trailers (or trailers-only headers) of a parse failure. Returns the
 * trailers to send instead, or undefined to send them as they are. `message` is decoded.
 */
export function grpcParseErrorTrailers(
  status: string | undefined,
  message: string,
  domain: string,
): Record<string, string> | undefined {
  if (status !== String(Code.Internal)) return undefined;
  const ce = requestParseError(message, domain);
  return ce && statusTrailers(ce);
}

/**
 * Add a hook (to the app itself, like the grpc-message one) that fixes unary Connect error
 * answers on their way out: a request message that cannot be decoded (answered 500 with code
 * `internal`) becomes 400 INVALID_ARGUMENT, and an error body without ErrorInfo gets it.
 */
export function addConnectParseErrorStatus<S extends RawServerBase>(
  app: FastifyInstance<S>,
  domain: string,
): void {
  // A callback hook, not an async one: every request passes it (a REST call too), and an
  // async hook costs each of them a promise and a turn of the microtask queue.
  app.addHook("onRequest", (req, reply, done) => {
    // Unary Connect calls (POST, or the GET form) on the Connect router's own routes; gRPC and
    // gRPC-Web carry their status elsewhere, and REST shapes its errors itself.
    const q = req.url.indexOf("?");
    if (!rpcPath.test(q < 0 ? req.url : req.url.slice(0, q))) return done();
    const type = String(req.headers["content-type"] ?? "");
    if (req.method === "POST" ? !isConnectUnary(type) : req.method !== "GET") return done();
    const raw = reply.raw as unknown as ServerResponse;
    const { writeHead, write, end } = raw;
    type Fn = (...a: unknown[]) => unknown;
    let held: { status: number; headers: Record<string, unknown> } | undefined;
    // Send the held head, corrected when `chunk` is a parse failure's error body; returns the
    // body to write in its place. Puts the response's own methods back.
    const release = (chunk: unknown): unknown => {
      const { status, headers } = held!;
      held = undefined;
      Object.assign(raw, { writeHead, write, end });
      const fixed = fixedBody(chunk, domain);
      if (!fixed) {
        writeHead.call(raw, status, headers as never);
        return chunk;
      }
      const lengthKey = Object.keys(headers).find((k) => k.toLowerCase() === "content-length");
      if (lengthKey !== undefined) headers[lengthKey] = String(fixed.body.length);
      writeHead.call(raw, fixed.status ?? status, headers as never);
      return fixed.body;
    };
    raw.writeHead = ((status: number, headers?: Record<string, unknown>) => {
      if (status < 400 || headers === undefined) {
        return writeHead.call(raw, status, headers as never);
      }
      held = { status, headers };
      return raw;
    }) as typeof raw.writeHead;
    raw.write = ((chunk: unknown, ...rest: unknown[]) =>
      (write as Fn).call(raw, held ? release(chunk) : chunk, ...rest)) as typeof raw.write;
    // Ended without a write (no body, or the body handed to end): the held head still goes.
    raw.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (!held) return (end as Fn).call(raw, chunk, ...rest);
      const body = typeof chunk === "function" ? undefined : chunk;
      const out = release(body);
      return (end as Fn).call(raw, body === undefined ? chunk : out, ...rest);
    }) as unknown as typeof raw.end;
    done();
  });
}

function isConnectUnary(type: string): boolean {
  return /^application\/(proto|json)\s*(;|$)/i.test(type);
}

/**
 * The corrected error body of a Connect error: a parse failure's becomes INVALID_ARGUMENT
 * (HTTP 400), and a body without ErrorInfo (an error the protocol layer raised before any
 * interceptor: bad compression, malformed JSON, an unsupported content type, ...) gets it.
 * Undefined when the body needs nothing.
 */
function fixedBody(
  chunk: unknown,
  domain: string,
): { body: Uint8Array; status?: number } | undefined {
  if (!(chunk instanceof Uint8Array)) return undefined;
  let body: { code?: unknown; message?: unknown; details?: { type?: unknown }[] };
  try {
    body = JSON.parse(Buffer.from(chunk).toString("utf8")) as typeof body;
  } catch {
    return undefined;
  }
  if (typeof body.code !== "string") return undefined;
  const message = typeof body.message === "string" ? body.message : "";
  if (body.code === "internal") {
    const ce = requestParseError(message, domain);
    if (ce) return { body: connectErrorJson(ce), status: 400 };
  }
  if (body.details?.[0]?.type === "google.rpc.ErrorInfo") return undefined;
  const code = connectCodeOf(body.code);
  if (code === undefined) return undefined;
  return { body: connectErrorJson(protocolError(code, message, domain)) };
}
