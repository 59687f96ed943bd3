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
            ...ctx,
            service: req.service,
            requestHeader: req.header,
            signal: req.signal,
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
    const ctx = createRestContext(service, method, init);
    init.contextValues.set(kHandlerContext, ctx);
    init.onCancel((reason) => ctx.abort(reason));
    const req: UnaryRequest = {
      stream: false,
      service,
      method,
      message,
      requestMethod: init.requestMethod,
      url: init.url,
      get signal() {
        return ctx.signal;
      },
      header: ctx.requestHeader,
      contextValues: init.contextValues,
    };
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
 * The HandlerContext of one REST call: what connect's createHandlerContext makes, but with
 * the AbortSignal made only when someone reads it. Most calls never do, and two linked
 * signals (a deadline that REST lacks, and the call's own) per call were 13% of a GetGroup in
 * a profile. REST calls have no deadline, so `timeoutMs()` is undefined.
 */
function createRestContext(
  service: DescService,
  method: DescMethodUnary,
  init: UnaryCallInit,
): HandlerContext & { abort(reason: unknown): void } {
  let controller: AbortController | undefined;
  let abortedWith: { reason: unknown } | undefined;
  return {
    service,
    method,
    protocolName: restProtocolName,
    requestMethod: init.requestMethod,
    url: init.url,
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (abortedWith) controller.abort(abortedWith.reason);
      }
      return controller.signal;
    },
    timeoutMs: () => undefined,
    requestHeader: new Headers(init.header as [string, string][]),
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: init.contextValues,
    abort(reason) {
      if (abortedWith) return;
      abortedWith = { reason };
      controller?.abort(reason);
    },
  };
}
