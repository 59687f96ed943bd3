import { create, type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextKey,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** The protocol name handlers see in `HandlerContext.protocolName` for REST calls. */
export const restProtocolName = "rest";

/** The per-request inputs of a call that do not come from the message. */
export interface UnaryCallInit {
  /** The HTTP method of the request. */
  readonly requestMethod: string;
  /** The URL received by the server. */
  readonly url: string;
  /** The request headers as name/value pairs. */
  readonly header: readonly [string, string][];
  /**
   * Called once with the call's abort function, for the caller to invoke when the client
   * goes away (a listener on the connection is cheaper than one more linked AbortSignal).
   */
  readonly onCancel: (abort: (reason: unknown) => void) => void;
  /** From the same factory the Connect router uses. */
  readonly contextValues: ContextValues;
}

/** Run one RPC through the interceptors and its implementation. */
export type UnaryCall = (message: Message, init: UnaryCallInit) => Promise<UnaryResponse>;

type AnyFn = Parameters<Interceptor>[0];

const callComplete = new ConnectError("the call is complete", Code.Canceled);

// The HandlerContext of the call in flight, for the innermost function of the chain.
const kHandlerContext = createContextKey<HandlerContext | undefined>(undefined, {
  description: "the REST call's handler context",
});

/**
 * Create the caller of one unary method: the interceptor chain is composed here, once, around
 * the same implementation the Connect router serves (a missing method answers UNIMPLEMENTED,
 * as on the router). Per call it creates the HandlerContext (createRestContext), builds
 * the UnaryRequest the interceptors see, and returns the UnaryResponse, whose header and
 * trailer carry what the handler set on its context.
 */
export function createUnaryCall(
  service: DescService,
  method: DescMethodUnary,
  impl: Partial<ServiceImpl<DescService>>,
  interceptors: readonly Interceptor[],
): UnaryCall {
  const spec = createServiceImplSpec(service, impl).methods[method.localName];
  if (spec?.kind !== "unary") throw new Error(`${service.typeName}/${method.name} is not unary`);
  const handler = spec.impl;

  const innermost: AnyFn = async (req) => {
    const ctx = req.contextValues.get(kHandlerContext)!;
    // As connect's router does, the handler sees what the interceptors passed on; usually
    // that is the context itself, whose signal is then still made only if read.
    const unchanged =
      req.header === ctx.requestHeader &&
      req.contextValues === ctx.values &&
      req.service === service;
    const output = await handler(
      req.message as Message,
      unchanged
        ? ctx
        : {
            service: req.service,
            method: ctx.method,
            protocolName: ctx.protocolName,
            requestMethod: ctx.requestMethod,
            url: ctx.url,
            signal: req.signal,
            timeoutMs: ctx.timeoutMs,
            requestHeader: req.header,
            responseHeader: ctx.responseHeader,
            responseTrailer: ctx.responseTrailer,
            values: req.contextValues,
          },
    );
    return {
      stream: false,
      service: req.service,
      method,
      message: create(method.output, output),
      header: ctx.responseHeader,
      trailer: ctx.responseTrailer,
    } satisfies UnaryResponse;
  };
  const chain = interceptors.reduceRight<AnyFn>(
    (next, interceptor) => interceptor(next),
    innermost,
  );

  return async (message, init) => {
    const ctx = new RestContext(service, method, init);
    init.contextValues.set(kHandlerContext, ctx);
    init.onCancel((reason) => ctx.abort(reason));
    const req = new RestRequest(service, method, message, init, ctx);
    let res: Awaited<ReturnType<AnyFn>>;
    try {
      res = await chain(req);
    } catch (err) {
      ctx.abort(err);
      throw err;
    }
    // The signal also fires when the call is complete, as on the Connect router.
    ctx.abort(callComplete);
    if (res.stream) throw new Error("an interceptor turned a unary call into a stream");
    return res;
  };
}

const noTimeout = () => undefined;

/*
 * Why classes, and not object literals with a `get signal()`: a literal with a getter gets a
 * hidden class of its own per object (the getter is a new closure each time), and V8 keeps
 * hidden classes in the old generation. The getter, its closure and through it everything the
 * call touched (headers, the bearer token, the contexts) then survived every scavenge and was
 * promoted: about 3 kB per REST call, which made scavenges 5-10x longer and filled the old
 * generation with garbage (bench/RESULTS.md, "Open-loop tails"). A getter on a prototype is
 * one closure for all calls.
 */

/**
 * The HandlerContext of one REST call: what connect's createHandlerContext makes, but with
 * the AbortSignal made only when someone reads it. Most calls never do, and two linked
 * signals (a deadline that REST lacks, and the call's own) per call were 13% of a GetGroup in
 * a profile. REST calls have no deadline, so `timeoutMs()` is undefined.
 */
class RestContext implements HandlerContext {
  readonly protocolName: string = restProtocolName;
  readonly requestMethod: string;
  readonly url: string;
  readonly timeoutMs = noTimeout;
  readonly requestHeader: Headers;
  readonly responseHeader = new Headers();
  readonly responseTrailer = new Headers();
  readonly values: ContextValues;
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  constructor(
    readonly service: DescService,
    readonly method: DescMethodUnary,
    init: UnaryCallInit,
  ) {
    this.requestMethod = init.requestMethod;
    this.url = init.url;
    this.requestHeader = new Headers(init.header as [string, string][]);
    this.values = init.contextValues;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}

/** The UnaryRequest the interceptors see; its signal is the context's, made when read. */
class RestRequest implements UnaryRequest {
  readonly stream = false as const;
  readonly requestMethod: string;
  readonly url: string;
  readonly header: Headers;
  readonly contextValues: ContextValues;

  constructor(
    readonly service: DescService,
    readonly method: DescMethodUnary,
    readonly message: Message,
    init: UnaryCallInit,
    private readonly ctx: RestContext,
  ) {
    this.requestMethod = init.requestMethod;
    this.url = init.url;
    this.header = ctx.requestHeader;
    this.contextValues = init.contextValues;
  }

  get signal(): AbortSignal {
    return this.ctx.signal;
  }
}
