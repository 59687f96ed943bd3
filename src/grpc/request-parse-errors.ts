import type { ServerResponse } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { FastifyInstance, RawServerBase } from "fastify";
import { toApiError } from "../errors.js";

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
  const ce = new ConnectError(
    `the request message cannot be decoded: ${message.slice(parseFailure.length)}`,
    Code.InvalidArgument,
  );
  return toApiError(ce, domain, () => undefined);
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
  if (!ce) return undefined;
  const out: Record<string, string> = {};
  setTrailerStatus(new Headers(), ce).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

/**
 * Add a hook (to the app itself, like the grpc-message one) that fixes the Connect half: a
 * unary binary Connect call (`POST`, `application/proto`) answered 500 with a JSON body whose
 * code is `internal` and whose message is a parse failure gets 400 and the API error instead.
 */
export function addConnectParseErrorStatus<S extends RawServerBase>(
  app: FastifyInstance<S>,
  domain: string,
): void {
  app.addHook("onRequest", async (req, reply) => {
    if (req.method !== "POST" || !isProtoUnary(req.headers["content-type"])) return;
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
      if (lengthKey !== undefined) headers[lengthKey] = String(fixed.length);
      writeHead.call(raw, 400, headers as never);
      return fixed;
    };
    raw.writeHead = ((status: number, headers?: Record<string, unknown>) => {
      if (status !== 500 || headers === undefined) {
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
  });
}

function isProtoUnary(type: string | undefined): boolean {
  return type !== undefined && /^application\/proto\s*(;|$)/i.test(type);
}

/** The corrected body for a Connect error body of a parse failure, else undefined. */
function fixedBody(chunk: unknown, domain: string): Uint8Array | undefined {
  if (!(chunk instanceof Uint8Array)) return undefined;
  let body: { code?: unknown; message?: unknown };
  try {
    body = JSON.parse(Buffer.from(chunk).toString("utf8")) as typeof body;
  } catch {
    return undefined;
  }
  if (body.code !== "internal" || typeof body.message !== "string") return undefined;
  const ce = requestParseError(body.message, domain);
  return ce && errorToJsonBytes(ce, undefined);
}
