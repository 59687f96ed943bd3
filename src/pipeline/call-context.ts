import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type HandlerContext } from "@connectrpc/connect";

/**
 * The longest deadline a call can have: Node's timers hold at most 2^31-1 ms (about 24.8
 * days) and turn anything longer into 1 ms, with a warning on stderr.
 */
export const maxDeadlineMs = 2 ** 31 - 1;

/** The reason a call's signal fires with once the call has been answered, as on connect's router. */
export const callComplete = new ConnectError("the call is complete", Code.Canceled);

/** The reason a call's signal fires with when its deadline passes (connect's own words). */
export const deadlineExceeded = () =>
  new ConnectError("the operation timed out", Code.DeadlineExceeded);
const noTimeout = () => undefined;

/** The per-request inputs of a call that do not come from the message. */
export interface CallInit {
  /** What handlers see in `HandlerContext.protocolName`: `grpc`, `connect`, `rest`. */
  readonly protocolName: string;
  /** The HTTP method of the request. */
  readonly requestMethod: string;
  /** The URL received by the server. */
  readonly url: string;
  /** The request headers as name/value pairs (headerPairs). */
  readonly header: readonly [string, string][];
  /** The call's context values; they carry its CallInfo, which the call fills in. */
  readonly values: ContextValues;
  /** The deadline the caller asked for, in milliseconds, if any (the invocation clamps it). */
  readonly timeoutMs?: number | undefined;
}

/** What a CallContext is made from: a call's inputs and the method it calls. */
export interface CallContextInit extends CallInit {
  readonly service: DescService;
  readonly method: DescMethod;
}

/**
 * The HandlerContext of one call served outside connect's router (REST and the lean gRPC
 * and Connect paths): what connect's createHandlerContext makes, except that the
 * AbortSignal, and the deadline timer behind it, are made only when someone reads `signal`.
 * Most calls never do. Connect's context makes two linked AbortControllers per call (13% of a
 * REST GetGroup in a profile), and its deadline timer stays armed after the call until the
 * deadline passes unless the context is aborted.
 *
 * `abort(reason)` ends the signal, if it was made; `abort(callComplete)` when the call has
 * been answered, as the router does, also stops the deadline timer.
 *
 * The request's, response's and trailer's `Headers` are made when first read, too: undici's
 * Headers checks every name and value through webidl as it is built, and the three of them
 * were 15-17 us of a lean gRPC GetGroup's 300-430 (bench/RESULTS.md, round four), where
 * nothing but the access check reads a request header (through `requestHeaderValue`) and
 * nothing writes a response header. `madeResponseHeader` and `madeResponseTrailer` give the
 * paths what was set without making them.
 *
 * A class, not an object literal with `get signal()`: V8 gives each literal with a getter a
 * hidden class of its own (a map made per object, in the old generation), and with it
 * everything the call touched (headers, the bearer token, the message) survived every
 * scavenge: about 3 kB per REST call, which made scavenges 5-10x longer (bench/RESULTS.md,
 * "This run", night).
 */
export class CallContext implements HandlerContext {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly protocolName: string;
  readonly requestMethod: string;
  readonly url: string;
  readonly timeoutMs: () => number | undefined;
  readonly values: ContextValues;
  /** The request's headers as pairs, until someone reads `requestHeader`. */
  private readonly headerPairs: readonly [string, string][];
  private requestHeaders: Headers | undefined;
  private responseHeaders: Headers | undefined;
  private responseTrailers: Headers | undefined;
  /** performance.now() at which the deadline passes; Infinity without one. */
  private readonly deadlineAt: number;
  private controller: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private abortedWith: { reason: unknown } | undefined;

  constructor(init: CallContextInit) {
    this.service = init.service;
    this.method = init.method;
    this.protocolName = init.protocolName;
    this.requestMethod = init.requestMethod;
    this.url = init.url;
    this.headerPairs = init.header;
    this.values = init.values;
    if (init.timeoutMs === undefined) {
      this.deadlineAt = Number.POSITIVE_INFINITY;
      this.timeoutMs = noTimeout;
    } else {
      const at = performance.now() + init.timeoutMs;
      this.deadlineAt = at;
      this.timeoutMs = () => at - performance.now();
    }
  }

  get requestHeader(): Headers {
    this.requestHeaders ??= new Headers(this.headerPairs as [string, string][]);
    return this.requestHeaders;
  }

  get responseHeader(): Headers {
    this.responseHeaders ??= new Headers();
    return this.responseHeaders;
  }

  get responseTrailer(): Headers {
    this.responseTrailers ??= new Headers();
    return this.responseTrailers;
  }

  /** The response headers, if anything read or set them; undefined if not (none to send). */
  get madeResponseHeader(): Headers | undefined {
    return this.responseHeaders;
  }

  /** The response trailers, if anything read or set them; undefined if not (none to send). */
  get madeResponseTrailer(): Headers | undefined {
    return this.responseTrailers;
  }

  /**
   * A request header's value as `requestHeader.get(name)` gives it (several values joined
   * with ", "; null if none), without making the Headers if nobody has. `name` in lower case.
   */
  requestHeaderValue(name: string): string | null {
    if (this.requestHeaders) return this.requestHeaders.get(name);
    let value: string | null = null;
    for (const [k, v] of this.headerPairs) {
      if (k !== name) continue;
      const trimmed = trimHttpWhitespace(v);
      value = value === null ? trimmed : `${value}, ${trimmed}`;
    }
    return value;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const controller = new AbortController();
      this.controller = controller;
      if (this.abortedWith) {
        controller.abort(this.abortedWith.reason);
      } else if (this.deadlineAt !== Number.POSITIVE_INFINITY) {
        const left = this.deadlineAt - performance.now();
        if (left <= 0) controller.abort(deadlineExceeded());
        else this.timer = setTimeout(() => this.abort(deadlineExceeded()), left);
      }
    }
    return this.controller.signal;
  }

  /** Why the call was aborted (shutdown, cancellation, its deadline), if it was; undefined if not. */
  get aborted(): { readonly reason: unknown } | undefined {
    return this.abortedWith;
  }

  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.controller?.abort(reason);
  }
}

/** A header value as Headers keeps it: without leading or trailing tabs, spaces, CR or LF. */
function trimHttpWhitespace(v: string): string {
  const isWs = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  if (v.length === 0 || (!isWs(v.charCodeAt(0)) && !isWs(v.charCodeAt(v.length - 1)))) return v;
  return v.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
}

/**
 * Why a call whose client went away ended: CANCELED, or DEADLINE_EXCEEDED within 5 ms of its
 * deadline (clients cancel a call whose deadline passed on their own timers, which can fire a
 * little before the context's).
 */
export function cancelReason(context: CallContext): ConnectError {
  const left = context.timeoutMs();
  return left !== undefined && left < 5
    ? deadlineExceeded()
    : new ConnectError("the call was cancelled", Code.Canceled);
}

/**
 * The calls in flight of a server that answers outside connect's router, aborted at shutdown
 * through one listener on the shutdown signal (a context linked to the signal would leave a
 * listener per call on it). A call is added when it starts and deleted when it is answered.
 */
export function runningCalls(shutdownSignal: AbortSignal): Set<CallContext> {
  const running = new Set<CallContext>();
  shutdownSignal.addEventListener("abort", () => {
    for (const context of running) context.abort(shutdownSignal.reason);
  });
  return running;
}

/**
 * Request headers as name/value pairs for a CallContext, without HTTP/2's pseudo-headers
 * (`:path`): the REST gateway and the lean paths build theirs with it.
 */
export function headerPairs(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 /* ":" */) continue;
    const value = headers[name];
    if (typeof value === "string") pairs.push([name, value]);
    else if (Array.isArray(value)) for (const v of value) pairs.push([name, v]);
  }
  return pairs;
}
