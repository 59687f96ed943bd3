import { create, type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import {
  type ContextValues,
  createContextKey,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { CallContext, callComplete } from "../call-context.js";

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

// The HandlerContext of the call in flight, for the innermost function of the chain.
const kHandlerContext = createContextKey<HandlerContext | undefined>(undefined, {
  description: "the REST call's handler context",
});

/**
 * Create the caller of one unary method: the interceptor chain is composed here, once, around
 * the same implementation the Connect router serves (a missing method answers UNIMPLEMENTED,
 * as on the router). Per call it creates the HandlerContext (a CallContext), builds
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
    const ctx = new CallContext({
      service,
      method,
      protocolName: restProtocolName,
      requestMethod: init.requestMethod,
      url: init.url,
      header: init.header,
      values: init.contextValues,
    });
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

/**
 * The UnaryRequest the interceptors see; its signal is the context's, made when read. A
 * class for the reason CallContext is one: a getter in a per-call literal costs a hidden class
 * per call, and the call's objects outlived scavenges with it.
 */
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
    private readonly ctx: CallContext,
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
