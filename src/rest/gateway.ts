import { Transform } from "node:stream";
import { type ContextValues, createContextValues } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type CallInfo, kCallInfo } from "../call-info.js";
import { type ErrorLogger, invalidField } from "../errors.js";
import { createFieldJsonWriter, createJsonWriter, type JsonWriter } from "../json/message-json.js";
import type { Admission } from "../pipeline/admission.js";
import { headerPairs } from "../pipeline/call-context.js";
import type { UnaryCall, UnaryPipeline, UnaryProcedure } from "../pipeline/unary-invocation.js";
import { type BudgetShare, budgetExhausted, isBudgetExhausted } from "../request-budget.js";
import type { ServiceRegistration } from "../service-registration.js";
import {
  copyHeaders,
  type ErrorShaping,
  fromFastifyError,
  methodNotAllowedError,
  noRouteError,
  sendError,
  unsupportedEncodingError,
  unsupportedMediaTypeError,
} from "./error-reply.js";
import { formBodyToJson, isFormContentType } from "./form-body.js";
import { compileHttpRules, type RestRule } from "./http-rules.js";
import { isInputOnly } from "./input-only.js";
import { createRequestBuilder, type RequestBuilder } from "./request-builder.js";
import { createRouteTable } from "./route-table.js";

/** What the REST gateway serves and how; the same parts the Connect router is given. */
export interface RestGatewayOptions {
  /** The services and their implementations: the very objects the Connect router serves. */
  readonly services: readonly ServiceRegistration[];
  /**
   * The server's unary pipeline (src/pipeline/unary-invocation.ts): the Connect router's
   * interceptors around the same implementations, the call's context, shutdown and errors.
   */
  readonly pipeline: UnaryPipeline;
  /** The Connect router's context values factory. */
  readonly contextValues?: (req: FastifyRequest) => ContextValues;
  /** The `<service domain>` of ErrorInfo, as given to the error interceptor. */
  readonly domain: string;
  /** Where causes of unexpected errors go; they never reach the caller. */
  readonly log: ErrorLogger;
  /** Largest request body in bytes; more is RESOURCE_EXHAUSTED with HTTP 413. Default 1 MiB. */
  readonly bodyLimit?: number;
  /**
   * The server's call admission (src/pipeline/admission.ts): the token check and the other
   * checks before the body, and the budget share the body is charged to. Default: every call
   * admitted, bodies unbounded.
   */
  readonly admission?: Admission;
  /**
   * RPCs (`package.Service/Method`) whose `body: "*"` may also come as a posted form
   * (`application/x-www-form-urlencoded`), as token endpoints are called. Default: none.
   */
  readonly formBodies?: readonly string[];
  /**
   * Asked first about a request no rule's path matches; an answer it sends (it returns true)
   * replaces NOT_FOUND. The console sends browsers at `/` to itself this way.
   */
  readonly onNoRoute?: (request: FastifyRequest, reply: FastifyReply) => boolean;
}

/** A rule with its request builder and its call, all made at start-up. */
interface Endpoint extends RestRule {
  readonly build: RequestBuilder;
  readonly procedure: UnaryProcedure;
  /** Writes the answer's body: the output message (or its response_body field) as JSON. */
  readonly write: JsonWriter;
}

/** The protocol name handlers see in `HandlerContext.protocolName` for REST calls. */
export const restProtocolName = "rest";
const defaultBodyLimit = 1024 * 1024;
// protojson with implicit values written, input-only fields (a client secret) never, and
// Timestamps with their millisecond fraction (src/json/message-json.ts).
const jsonWrite = { alwaysEmitImplicit: true, omit: isInputOnly };
const utf8 = new TextDecoder("utf-8", { fatal: true });
const methodOrder = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * Fastify plugin serving every RPC that has a `google.api.http` option as REST/JSON, built at
 * start-up from the descriptors: `app.register(restGateway, { services, interceptors,
 * contextValues, domain, log })`. Register it in its own (encapsulated) context, after CORS.
 *
 * It adds one catch-all route (`/*`, every method but OPTIONS when CORS already answers it),
 * so fastify's exact routes (Connect's `/package.Service/Method`, health, `/.well-known`, …)
 * win and everything else comes here: a matching rule builds the request message, runs it
 * through the unary pipeline (src/pipeline/unary-invocation.ts: the same interceptor chain and
 * implementation as the Connect router, the call's context, shutdown and errors) and answers protojson
 * (camelCase, defaults included, int64 as strings). Errors answer API.md's body. A path no
 * rule knows is NOT_FOUND (404); a known path with another method is UNIMPLEMENTED with HTTP
 * 405 and `Allow`; OPTIONS answers 204 with `Allow`; HEAD runs the GET rule with no body.
 * A body must be `application/json` (UTF-8; a charset parameter is fine), or a form for the
 * RPCs in `formBodies`: anything else is INVALID_ARGUMENT with HTTP 415. A body over `bodyLimit` is RESOURCE_EXHAUSTED with HTTP 413.
 */
export async function restGateway(app: FastifyInstance, opts: RestGatewayOptions): Promise<void> {
  const shaping: ErrorShaping = { domain: opts.domain, log: opts.log };
  const bodyLimit = opts.bodyLimit ?? defaultBodyLimit;
  const made = opts.contextValues ?? (() => createContextValues());
  // One ContextValues a request, whoever asks first: onRequest's refusal check hands the
  // principal it found to the call through them.
  const valuesOf = new WeakMap<FastifyRequest, ContextValues>();
  const contextValues = (request: FastifyRequest): ContextValues => {
    let values = valuesOf.get(request);
    if (!values) {
      values = made(request);
      valuesOf.set(request, values);
    }
    return values;
  };
  const formBodies = new Set(opts.formBodies ?? []);

  const endpoints: Endpoint[] = [];
  for (const { service, impl, restInput } of opts.services) {
    const rules = compileHttpRules([service]);
    const procedures = new Map<string, UnaryProcedure>();
    for (const rule of rules) {
      let procedure = procedures.get(rule.method.localName);
      if (!procedure) {
        procedure = opts.pipeline.procedure(service, rule.method, impl);
        procedures.set(rule.method.localName, procedure);
      }
      endpoints.push({
        ...rule,
        build: createRequestBuilder(rule, restInput === "lenient"),
        procedure,
        write: rule.responseBody
          ? createFieldJsonWriter(rule.responseBody, jsonWrite)
          : createJsonWriter(rule.method.output, jsonWrite),
      });
    }
  }
  const table = createRouteTable(endpoints);
  const match = (method: string, path: string) =>
    table.match(method === "HEAD" ? "GET" : method, path);
  // The route onRequest found, for the handler: matching again cost a REST GetGroup 1%.
  const matched = new WeakMap<FastifyRequest, ReturnType<typeof match>>();
  // The budget share admission gave a request's body, for preParsing.
  const shares = new WeakMap<FastifyRequest, BudgetShare>();
  // CORS (registered before) answers preflights with its own OPTIONS catch-all.
  const answersOptions = !app.hasRoute({ method: "OPTIONS", url: "/*" });

  const allowHeader = (methods: string[]): string => {
    const all = new Set(methods);
    if (all.has("GET")) all.add("HEAD");
    if (answersOptions) all.add("OPTIONS");
    return [...all].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).join(", ");
  };

  const noRoute = (request: FastifyRequest, reply: FastifyReply, path: string, info?: CallInfo) => {
    const allowed = table.allowedMethods(path);
    if (allowed.length === 0) {
      if (opts.onNoRoute?.(request, reply)) {
        if (info) info.code = 0;
        return reply;
      }
      return sendError(reply, noRouteError(request.method, path), shaping, { info, status: 404 });
    }
    const allow = allowHeader(allowed);
    reply.header("allow", allow);
    if (request.method === "OPTIONS") {
      if (info) info.code = 0;
      return reply.code(204).send();
    }
    const err = methodNotAllowedError(request.method, path, allow);
    return sendError(reply, err, shaping, { info, status: 405 });
  };

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const values = contextValues(request);
    const info = values.get(kCallInfo);
    const url = request.url;
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const found = matched.get(request) ?? match(request.method, path);
    if (!found) return noRoute(request, reply, path, info);
    const ep = found.route;
    if (info) info.rpc = ep.rpc;
    try {
      const raw = request.body as Buffer | undefined;
      let body = "";
      if (raw !== undefined && raw.length > 0) {
        const type = request.headers["content-type"];
        if (isJsonContentType(type)) {
          body = decodeUtf8(raw, ep);
        } else if (ep.body.kind === "all" && formBodies.has(ep.rpc) && isFormContentType(type)) {
          body = formBodyToJson(decodeUtf8(raw, ep));
        } else {
          const err = unsupportedMediaTypeError(type);
          return sendError(reply, err, shaping, { rpc: ep.rpc, info, status: 415 });
        }
      }
      const call = opts.pipeline.start(ep.procedure, {
        protocolName: restProtocolName,
        requestMethod: request.method,
        url: `${request.protocol}://${request.host}${url}`,
        header: headerPairs(request.headers),
        values,
      });
      onClientGone(reply, call);
      const output = await call.run(() =>
        ep.build({ segments: found.segments, query: q < 0 ? "" : url.slice(q + 1), body }),
      );
      copyHeaders(call.context.madeResponseHeader, reply);
      copyHeaders(call.context.madeResponseTrailer, reply);
      return reply.code(200).header("content-type", "application/json").send(ep.write(output));
    } catch (err) {
      return sendError(reply, err, shaping, { rpc: ep.rpc, info });
    }
  };

  // Bodies are read raw and parsed against the rule, so that every failure is an API error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err, request, reply) => {
    const info = contextValues(request).get(kCallInfo);
    const path = request.url.split("?", 1)[0]!;
    const rpc = table.match(request.method === "HEAD" ? "GET" : request.method, path)?.route.rpc;
    if (isBudgetExhausted(err)) return sendError(reply, err, shaping, { rpc, info, status: 503 });
    const mapped = fromFastifyError(err, bodyLimit, request.headers["content-type"]);
    return sendError(reply, mapped?.error ?? err, shaping, { rpc, info, status: mapped?.status });
  });
  app.route({
    method: app.supportedMethods.filter((m) => answersOptions || m !== "OPTIONS"),
    url: "/*",
    bodyLimit,
    // Before the body is read (issue 23): a compressed one is refused (it was parsed as if
    // plain), and so is a call that admission refuses (a token missing or not valid, a rate
    // limit); an admitted one learns the budget share its body is charged to.
    onRequest: async (request, reply) => {
      const encoding = request.headers["content-encoding"];
      const plain = encoding === undefined || encoding.trim().toLowerCase() === "identity";
      const url = request.url;
      const q = url.indexOf("?");
      const found = match(request.method, q < 0 ? url : url.slice(0, q));
      if (found) matched.set(request, found);
      const rpc = found?.route.rpc;
      let refused: unknown;
      if (plain && opts.admission) {
        const given = request.headers.authorization;
        const admitted = await opts.admission.admit({
          rpc,
          authorization: typeof given === "string" ? given : null,
          requestId: request.id,
          values: contextValues(request),
          address: request.raw.socket?.remoteAddress,
        });
        // Only a body is charged: most REST calls (every GET) have none.
        if (admitted.share && !hasNoBody(request)) shares.set(request, admitted.share);
        refused = admitted.refused;
      }
      if (plain && refused === undefined) return;
      const info = contextValues(request).get(kCallInfo);
      if (info && rpc) info.rpc = rpc;
      if (!plain) {
        const err = unsupportedEncodingError(encoding as string);
        return sendError(reply, err, shaping, { rpc, info, status: 415 });
      }
      return sendError(reply, refused, shaping, { rpc, info });
    },
    // Every chunk read is charged to the call's share of the budget of all request bodies
    // (a declared length at once, before it is read), and given back once the call has been
    // answered.
    preParsing: async (request, reply, payload) => {
      const share = shares.get(request);
      if (!share) return payload;
      // A body whose length is declared is charged whole before it is read, and given back
      // the same way: the parser reads no more than that, so a Transform on every call (its
      // streams' state and a pipe, on every REST create) would count the same bytes later.
      const declared = declaredLength(request, bodyLimit);
      if (declared !== undefined) {
        if (!share.take(declared)) throw budgetExhausted();
        reply.raw.once("close", () => share.give(declared));
        return payload;
      }
      let held = 0;
      reply.raw.once("close", () => share.give(held));
      return payload.pipe(
        new Transform({
          transform(chunk: Buffer, _enc, done) {
            if (!share.take(chunk.length)) {
              done(budgetExhausted());
              return;
            }
            held += chunk.length;
            done(null, chunk);
          },
        }),
      );
    },
    handler: handle,
  });
}

function rank(method: string): number {
  const i = methodOrder.indexOf(method);
  return i < 0 ? methodOrder.length : i;
}

// Whether a Content-Type is JSON in UTF-8: `application/json`, any case, charset utf-8 or none.
function isJsonContentType(type: string | undefined): boolean {
  if (type === "application/json") return true;
  if (type === undefined) return false;
  const parts = type.split(";");
  if (parts[0]!.trim().toLowerCase() !== "application/json") return false;
  for (let k = 1; k < parts.length; k++) {
    const [name, value = ""] = parts[k]!.split("=");
    if (name!.trim().toLowerCase() !== "charset") continue;
    if (value.trim().replace(/"/g, "").toLowerCase() !== "utf-8") return false;
  }
  return true;
}

function decodeUtf8(raw: Buffer, ep: Endpoint): string {
  try {
    return utf8.decode(raw);
  } catch {
    throw invalidField(ep.body.kind === "field" ? ep.body.field.name : "body", "not UTF-8");
  }
}

/**
 * Whether a request certainly has no body, so that nothing needs charging to the budget (a
 * Transform piped per GET cost 2% of a REST GetGroup): on HTTP/1.1, neither Transfer-Encoding
 * nor a Content-Length above 0 (RFC 9112 6.3); on HTTP/2, a stream ended with its headers.
 */
function hasNoBody(request: FastifyRequest): boolean {
  const raw = request.raw as { httpVersionMajor?: number; stream?: { endAfterHeaders?: boolean } };
  if (raw.httpVersionMajor === 2) return raw.stream?.endAfterHeaders === true;
  const { headers } = request;
  return (
    headers["transfer-encoding"] === undefined &&
    (headers["content-length"] === undefined || headers["content-length"] === "0")
  );
}

/**
 * The body length an HTTP/1.1 request declares (Content-Length, no Transfer-Encoding), when
 * it is within `limit`; undefined otherwise (chunked, HTTP/2, or over the limit, which
 * fastify refuses with 413 before reading). Node's HTTP/1.1 parser hands on no more than
 * the declared length as the body (RFC 9112 6.3), so charging it up front bounds what the
 * call will hold.
 */
function declaredLength(request: FastifyRequest, limit: number): number | undefined {
  const raw = request.raw as { httpVersionMajor?: number };
  if (raw.httpVersionMajor !== 1) return undefined;
  const { headers } = request;
  const length = headers["content-length"];
  if (length === undefined || headers["transfer-encoding"] !== undefined) return undefined;
  if (!/^\d{1,15}$/.test(length)) return undefined;
  const n = Number(length);
  return n <= limit ? n : undefined;
}

// Cancel the call when the connection closes before the response was written.
function onClientGone(reply: FastifyReply, call: UnaryCall): void {
  const res = reply.raw;
  res.once("close", () => {
    if (!res.writableEnded) call.cancel();
  });
}
