import { isDeepStrictEqual } from "node:util";
import type { DifferentialPair, RawAnswer, RawRequest } from "./differential-pair.js";
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
