import { isDeepStrictEqual } from "node:util";
import type { DifferentialPair, LogLine, RawAnswer, RawRequest } from "./differential-pair.js";
import type { WireProtocol } from "./differential-requests.js";

// What the differential suite compares of two answers to one request: everything a client
// can see, but the date, the request id and the one framing difference the gRPC spec allows.

/** What must match between the two paths' answers to one gRPC call. */
export function grpcView(a: RawAnswer) {
  const status = a.trailers["grpc-status"] ?? a.headers["grpc-status"];
  // An error may go out trailers-only (the lean path) or as headers then trailers (the
  // router): the gRPC spec allows both, and clients read the status from either.
  const split = status === "0";
  return {
    status: a.status,
    headers: split ? stripped(a.headers) : stripped({ ...a.headers, ...a.trailers }),
    trailers: split ? a.trailers : undefined,
    body: a.body.toString("base64"),
    reset: a.reset,
  };
}

/**
 * What must match between the two paths' answers to one Connect call (`connection` and
 * `keep-alive` are the HTTP/1.1 connection's, not the call's).
 */
export function connectView(a: RawAnswer) {
  const { connection: _c, "keep-alive": _k, ...headers } = stripped(a.headers);
  return { status: a.status, headers, trailers: a.trailers, body: a.body.toString("base64") };
}

/** Headers without what differs between any two answers: the date and the request id. */
function stripped(h: RawAnswer["headers"]) {
  const { date: _d, "x-request-id": _r, ...rest } = h;
  return rest;
}

/** One call whose answers differ: where, and both answers as compared. */
export interface Mismatch {
  call: string;
  lean: unknown;
  router: unknown;
}

/** Send one request to both servers: the lean answer, and a mismatch if what must match does not. */
export async function compare(
  pair: DifferentialPair,
  protocol: WireProtocol,
  req: RawRequest,
  label: string,
): Promise<{ lean: RawAnswer; mismatch?: Mismatch }> {
  const { lean, router } = await pair.both(req);
  const view = protocol === "grpc" ? grpcView : connectView;
  const [a, b] = [view(lean), view(router)];
  return isDeepStrictEqual(a, b)
    ? { lean }
    : { lean, mismatch: { call: label, lean: a, router: b } };
}

/**
 * The request log lines both servers wrote for the calls with request ids `ids`, once both
 * have written them all (a line is written when the server sees the stream close, which may
 * come after the client has its answer), or after five seconds: the calls whose lines differ,
 * or are missing, by id.
 */
export async function logMismatches(
  pair: DifferentialPair,
  ids: ReadonlyMap<string, string>,
  known: (lean: LogLine, router: LogLine) => boolean = () => false,
): Promise<Mismatch[]> {
  const index = (lines: LogLine[]) => {
    const byId = new Map<unknown, LogLine>();
    for (const l of lines) if (l.msg === "request") byId.set(l.reqId, l);
    return byId;
  };
  let lean = index(pair.logs.lean);
  let router = index(pair.logs.router);
  const complete = () => [...ids.keys()].every((id) => lean.has(id) && router.has(id));
  for (let waited = 0; !complete() && waited < 5_000; waited += 20) {
    await new Promise((r) => setTimeout(r, 20));
    lean = index(pair.logs.lean);
    router = index(pair.logs.router);
  }
  const out: Mismatch[] = [];
  for (const [id, label] of ids) {
    const [a, b] = [comparableLine(lean.get(id)), comparableLine(router.get(id))];
    if (a === undefined || b === undefined || known(a, b)) {
      if (a === undefined || b === undefined) {
        out.push({ call: `${label} (its log line)`, lean: a, router: b });
      }
      continue;
    }
    if (!isDeepStrictEqual(a, b)) {
      out.push({ call: `${label} (its log line)`, lean: a, router: b });
    }
  }
  return out;
}

/** A log line without what differs between any two: time, process, host and duration. */
function comparableLine(line: LogLine | undefined): LogLine | undefined {
  if (!line) return undefined;
  const { time: _t, pid: _p, hostname: _h, durationMs: _d, ...rest } = line;
  return rest;
}

/**
 * A known difference of log lines (pinned in describeKnownDifferences): a call refused before
 * the interceptors (a message that does not decode, an unknown encoding, a compressed message
 * without one) is logged by the router as `POST /path` without a code, by the lean paths with
 * the RPC's name and the code.
 */
export function unnamedOnRouter(lean: LogLine, router: LogLine): boolean {
  const { code, method, ...rest } = lean;
  const { method: routerMethod, ...routerRest } = router;
  return (
    typeof code === "string" &&
    !("code" in router) &&
    routerMethod === `POST /${String(method)}` &&
    isDeepStrictEqual(rest, routerRest)
  );
}
