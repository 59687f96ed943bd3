import { Readable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { type ContextValues, createClient } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  EventSchema,
  EventsService,
  ExportEventsRequestSchema,
} from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { kCallInfo } from "../call-info.js";
import { createJsonWriter } from "../json/message-json.js";
import { inProcessTransport, type UniversalHandler } from "../pipeline/connect-protocol.js";
import { type ErrorShaping, sendError } from "../rest/error-reply.js";
import { isInputOnly } from "../rest/input-only.js";
import { applyQuery } from "../rest/query-params.js";

/** The REST path of ExportEvents: the events of a time range as JSON Lines. */
export const eventsExportPath = "/events/v2beta1/events:export";

/** The content type of the export's answer: one JSON object (a CloudEvent) a line. */
export const jsonLinesType = "application/x-ndjson";

/** What the export route is built from: the Connect router's handlers and the server's ways. */
export interface ExportRouteDeps extends ErrorShaping {
  /** The Connect router's handlers: the route calls ExportEvents' own, interceptors and all. */
  handlers: readonly UniversalHandler[];
  /** The request's context values, as every path of the server makes them (its CallInfo). */
  contextValues: (req: FastifyRequest) => ContextValues;
}

const method = EventsService.method.exportEvents;
const rpc = `${EventsService.typeName}/${method.name}`;
// As the REST gateway writes a message: implicit values written, millisecond timestamps.
const writeEvent = createJsonWriter(EventSchema, { alwaysEmitImplicit: true, omit: isInputOnly });
const queryRules = {
  schema: ExportEventsRequestSchema,
  pathBound: [],
  body: { kind: "none" },
  ignoreUnknown: false,
} as const;

/**
 * Serve ExportEvents over REST: `GET /events/v2beta1/events:export?start_time=…` answers the
 * events as JSON Lines, written as the stream yields them (a page of the store at a time).
 * google.api.http cannot bind a server stream, so the REST gateway has no rule for it: this
 * route reads the query as the gateway reads ListEvents' (snake_case or camelCase, the same
 * errors), then runs the RPC through the Connect router's own handler, in process, with the
 * request's context values, so that the interceptors (rate limits, access: the caller's list
 * scope, errors) decide exactly as for a gRPC or Connect call. An error before the first
 * event is an API error with its HTTP status; one after it cuts the answer short (the client
 * sees a truncated chunked body, never a line that is not an event).
 */
export function addEventsExportRoute(app: FastifyInstance, deps: ExportRouteDeps): void {
  const handler = deps.handlers.find((h) => h.method === method);
  if (!handler) throw new Error(`${rpc} is not served: no REST export`);
  // fastify reads `:` as a parameter: `::` is a literal colon.
  app.get(eventsExportPath.replace(":", "::"), async (request, reply) => {
    const values = deps.contextValues(request);
    const info = values.get(kCallInfo);
    if (info) info.rpc = rpc;
    try {
      const q = request.url.indexOf("?");
      const req = create(ExportEventsRequestSchema);
      if (q >= 0) applyQuery(queryRules, req, request.url.slice(q + 1), undefined);
      const abort = new AbortController();
      reply.raw.once("close", () => abort.abort());
      const client = createClient(EventsService, inProcessTransport(handler, values));
      const authorization = request.headers.authorization;
      const events = client
        .exportEvents(req, {
          signal: abort.signal,
          headers: authorization === undefined ? {} : { authorization },
        })
        [Symbol.asyncIterator]();
      // The first event (or the end) decides the status: a refusal is an answer of its own.
      const first = await events.next();
      return reply
        .code(200)
        .header("content-type", jsonLinesType)
        .send(Readable.from(lines(first, events)));
    } catch (err) {
      return sendError(reply, err, deps, { rpc, info });
    }
  });
}

/** Each event as a line, starting from the first one already read. */
async function* lines(
  first: IteratorResult<unknown>,
  rest: AsyncIterator<unknown>,
): AsyncGenerator<string> {
  for (let r = first; !r.done; r = await rest.next()) {
    yield `${writeEvent(r.value as never)}\n`;
  }
}
