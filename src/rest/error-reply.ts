import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { CallInfo } from "../call-info.js";
import { type ErrorLogger, toApiError } from "../errors.js";
import { httpStatusOf, toRestErrorBody } from "./error-body.js";

/** How errors are shaped: the ErrorInfo domain and where unexpected causes are logged. */
export interface ErrorShaping {
  readonly domain: string;
  readonly log: ErrorLogger;
}

/** Where an error happened, for the request log and the error log. */
export interface ErrorScope {
  /** `package.Service/Method` when the request reached a rule. */
  readonly rpc?: string | undefined;
  /** The request's log record, filled with the code the request ends with. */
  readonly info?: CallInfo | undefined;
  /** An HTTP status that says more than the code's (404 no route, 405, 413, 415). */
  readonly status?: number | undefined;
}

/**
 * Send anything thrown while serving a REST request as the API error body of API.md
 * (`{code, message, details}`, ErrorInfo first, store errors mapped, unexpected ones logged
 * and hidden behind INTERNAL), with the code's HTTP status, `WWW-Authenticate: Bearer` on
 * UNAUTHENTICATED, and the error's metadata as headers.
 */
export function sendError(
  reply: FastifyReply,
  err: unknown,
  shaping: ErrorShaping,
  scope: ErrorScope = {},
): FastifyReply {
  const { rpc } = scope;
  const ce = toApiError(err, shaping.domain, (msg, fields) =>
    shaping.log(msg, rpc ? { ...fields, rpc } : fields),
  );
  if (scope.info) {
    if (rpc) scope.info.rpc = rpc;
    scope.info.code = ce.code;
  }
  copyHeaders(ce.metadata, reply);
  if (ce.code === Code.Unauthenticated && !reply.hasHeader("www-authenticate")) {
    reply.header("www-authenticate", "Bearer");
  }
  return reply
    .code(scope.status ?? httpStatusOf(ce.code))
    .header("content-type", "application/json")
    .send(JSON.stringify(toRestErrorBody(ce)));
}

// Headers that describe the HTTP exchange itself, or another protocol's framing.
const reserved = new Set([
  "connection",
  "content-encoding",
  "content-length",
  "content-type",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Copy headers a handler or interceptor set (response headers, trailers, error metadata) onto
 * the reply, leaving out framing headers and `grpc-*` / `connect-*` protocol headers.
 */
export function copyHeaders(from: Headers | undefined, reply: FastifyReply): void {
  from?.forEach((value, name) => {
    if (reserved.has(name) || name.startsWith("grpc-") || name.startsWith("connect-")) return;
    reply.header(name, value);
  });
}

/** The error for a path no rule matches: NOT_FOUND, HTTP 404. */
export function noRouteError(method: string, path: string): ConnectError {
  return new ConnectError(noRouteMessage(method, path), Code.NotFound);
}

function noRouteMessage(method: string, path: string): string {
  return `Not found: no REST route for ${method} ${shorten(path)}`;
}

/** Answers a request whose path no rule matches (createNoRouteReply). */
export type NoRouteReply = (
  reply: FastifyReply,
  method: string,
  path: string,
  info?: CallInfo,
) => FastifyReply;

/**
 * Answer a path no rule matches as sendError answers noRouteError (HTTP 404, the same body),
 * from a body made once: a scan of unknown paths would otherwise cost two Errors (two stack
 * traces) and a protobuf rendering per request. Only the message differs from one to the next.
 */
export function createNoRouteReply(shaping: ErrorShaping): NoRouteReply {
  // The body of one such error, with a message that JSON quotes as nothing else does.
  const marker = "\u0000no-route\u0000";
  const body = JSON.stringify(
    toRestErrorBody(
      toApiError(new ConnectError(marker, Code.NotFound), shaping.domain, shaping.log),
    ),
  );
  const quoted = JSON.stringify(marker);
  const at = body.indexOf(quoted);
  const head = body.slice(0, at);
  const tail = body.slice(at + quoted.length);
  return (reply, method, path, info) => {
    if (info) info.code = Code.NotFound;
    return reply
      .code(404)
      .header("content-type", "application/json")
      .send(head + JSON.stringify(noRouteMessage(method, path)) + tail);
  };
}

/**
 * The error for a known path with a method it does not have: UNIMPLEMENTED (as grpc-gateway
 * answers), sent with HTTP 405 and an Allow header.
 */
export function methodNotAllowedError(method: string, path: string, allow: string): ConnectError {
  return new ConnectError(
    `Unimplemented: method ${method} is not allowed on ${shorten(path)}; allowed: ${allow}`,
    Code.Unimplemented,
  );
}

/**
 * The error for a compressed request body: INVALID_ARGUMENT, sent with HTTP 415 before the
 * body is read. REST bodies are small JSON; refusing every encoding leaves no inflation to bound.
 */
export function unsupportedEncodingError(encoding: string): ConnectError {
  return new ConnectError(
    `Invalid argument: Content-Encoding: ${JSON.stringify(encoding)} is not supported; send the body uncompressed`,
    Code.InvalidArgument,
  );
}

/** The error for a body that is not JSON: INVALID_ARGUMENT, sent with HTTP 415. */
export function unsupportedMediaTypeError(contentType: string | undefined): ConnectError {
  const given = contentType === undefined ? "no Content-Type" : JSON.stringify(contentType);
  return new ConnectError(
    `Invalid argument: Content-Type: ${given} is not supported; send application/json`,
    Code.InvalidArgument,
  );
}

/** The error for a body over the limit: RESOURCE_EXHAUSTED, sent with HTTP 413. */
export function bodyTooLargeError(limit: number): ConnectError {
  return new ConnectError(
    `Resource exhausted: the request body is larger than ${limit} bytes`,
    Code.ResourceExhausted,
  );
}

/**
 * Map an error fastify raised before the handler (while reading the body) to an API error and
 * the HTTP status to send it with; undefined for anything that is not such an error.
 */
export function fromFastifyError(
  err: unknown,
  bodyLimit: number,
  contentType: string | undefined,
): { error: ConnectError; status: number } | undefined {
  if (!(err instanceof Error) || !("code" in err) || typeof err.code !== "string") return undefined;
  const status = "statusCode" in err && typeof err.statusCode === "number" ? err.statusCode : 500;
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return { error: bodyTooLargeError(bodyLimit), status: 413 };
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return { error: unsupportedMediaTypeError(contentType), status: 415 };
    default:
      if (!err.code.startsWith("FST_") || status < 400 || status > 499) return undefined;
      return {
        error: new ConnectError(`Invalid argument: ${err.message}`, Code.InvalidArgument),
        status,
      };
  }
}

/**
 * Create fastify's `frameworkErrors` option (a Fastify() setting, so the composition root
 * passes it): errors fastify raises before any route runs, such as a malformed
 * percent-encoding in the URL, answer API.md's error body too (INVALID_ARGUMENT, with the
 * HTTP status fastify chose) instead of fastify's own.
 */
export function createFrameworkErrorHandler(
  domain: string,
): (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  return (err, _req, reply) => {
    const mapped = fromFastifyError(err, 0, undefined);
    const log: ErrorLogger = (msg, fields) => reply.log.error(fields, msg);
    sendError(reply, mapped?.error ?? err, { domain, log }, { status: mapped?.status });
  };
}

function shorten(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}
