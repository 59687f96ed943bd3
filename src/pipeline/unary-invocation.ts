import { create, type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import {
  ConnectError,
  type ContextValues,
  createContextKey,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { type CallInfo, kCallInfo } from "../call-info.js";
import { kDeadlineChecked } from "../deadline-gate.js";
import { type ErrorLogger, toApiError } from "../errors.js";
import {
  CallContext,
  type CallInit,
  callComplete,
  cancelReason,
  deadlineExceeded,
  maxDeadlineMs,
  runningCalls,
} from "./call-context.js";

// The one unary invocation of every path that answers outside connect's router: the lean
// gRPC path (src/grpc/unary-grpc.ts), the lean Connect path (src/grpc/unary-connect.ts) and
// REST (src/rest/gateway.ts). Each path parses its own framing and writes its own answer;
// everything in between is here, once: the call's context and deadline, its registration for
// shutdown, the interceptors and the implementation, the call's record for the request log
// (rpc and code) and the shaping of every error into the API error the caller gets.

/** A unary method ready to be called: its interceptor chain is composed once, at start-up. */
export interface UnaryProcedure {
  /** `package.Service/Method`. */
  readonly rpc: string;
  readonly service: DescService;
  readonly method: DescMethodUnary;
}

/** One call in flight. */
export interface UnaryCall {
  /** Its HandlerContext: response headers and trailers are read from it for the answer. */
  readonly context: CallContext;
  /**
   * Read the request message (`input`: the path's own reading and decoding), then run the
   * interceptors and the implementation on it. Resolves with the output message; rejects
   * with the API error the caller gets (ErrorInfo first, store errors mapped, unexpected
   * ones logged and hidden behind INTERNAL), whatever failed. The call has ended either way.
   */
  run(input: () => Message | Promise<Message>): Promise<Message>;
  /**
   * The client went away before its answer: the call's signal fires with the returned
   * reason (CANCELED, or DEADLINE_EXCEEDED at its deadline), and shutdown forgets it.
   */
  cancel(): ConnectError;
}

/** What a unary pipeline is built from: the same parts the Connect router is given. */
export interface UnaryPipelineOptions {
  /** The router's interceptors, in the same order (the first is the outermost). */
  readonly interceptors: readonly Interceptor[];
  /** ErrorInfo.domain of every error. */
  readonly domain: string;
  /** Where causes of unexpected errors go; they never reach the caller. */
  readonly log: ErrorLogger;
  /** Aborted at shutdown: calls still running end. */
  readonly shutdownSignal: AbortSignal;
}

/** The unary invocation shared by the lean paths and REST. */
export interface UnaryPipeline {
  /**
   * The procedure of one unary method of an implementation, made at start-up. A method the
   * implementation lacks answers UNIMPLEMENTED through the interceptors, as on the router.
   */
  procedure(service: DescService, method: DescMethodUnary, impl: object): UnaryProcedure;
  /** Start a call of a procedure: its context exists, with its deadline, until it ends. */
  start(procedure: UnaryProcedure, init: CallInit): UnaryCall;
}

type AnyFn = Parameters<Interceptor>[0];

interface Procedure extends UnaryProcedure {
  readonly chain: AnyFn;
}

// The HandlerContext of the call in flight, for the innermost function of the chain.
const kHandlerContext = createContextKey<CallContext | undefined>(undefined, {
  description: "the unary call's handler context",
});

/** Create the unary pipeline of a server. */
export function createUnaryPipeline(opts: UnaryPipelineOptions): UnaryPipeline {
  const interceptors = [...opts.interceptors];
  const running = runningCalls(opts.shutdownSignal);

  const procedure = (service: DescService, method: DescMethodUnary, impl: object): Procedure => {
    const spec = createServiceImplSpec(service, impl).methods[method.localName];
    if (spec?.kind !== "unary") throw new Error(`${service.typeName}/${method.name} is not unary`);
    const handler = spec.impl as (
      message: Message,
      context: HandlerContext,
    ) => Promise<unknown> | unknown;
    const innermost: AnyFn = async (req) => {
      const ctx = req.contextValues.get(kHandlerContext)!;
      // As connect's router does, the handler sees what the interceptors passed on; usually
      // that is the context itself, whose signal is then still made only if read.
      const unchanged =
        req instanceof PipelineRequest &&
        req.context === ctx &&
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
      return new PipelineResponse(req.service, method, create(method.output, output as never), ctx);
    };
    const chain = interceptors.reduceRight<AnyFn>((next, i) => i(next), innermost);
    return { rpc: `${service.typeName}/${method.name}`, service, method, chain };
  };

  const start = (p: UnaryProcedure, init: CallInit): UnaryCall => {
    const proc = p as Procedure;
    const context = new CallContext({
      service: proc.service,
      method: proc.method,
      protocolName: init.protocolName,
      requestMethod: init.requestMethod,
      url: init.url,
      header: init.header,
      values: init.values,
      // Node's timers hold at most 2^31-1 ms; a longer deadline is as good as none.
      timeoutMs: init.timeoutMs === undefined ? undefined : Math.min(maxDeadlineMs, init.timeoutMs),
    });
    init.values.set(kHandlerContext, context);
    const info = init.values.get(kCallInfo);
    if (info) info.rpc = proc.rpc;
    running.add(context);
    return new PipelineCall(proc, context, info, running, opts);
  };

  return { procedure, start };
}

/**
 * One call in flight. A class, not a literal of closures: four closures per call, each
 * holding the call's context, cost more than one object whose methods are shared.
 */
class PipelineCall implements UnaryCall {
  private cancelled: ConnectError | undefined;

  constructor(
    private readonly proc: Procedure,
    readonly context: CallContext,
    private readonly info: CallInfo | undefined,
    private readonly running: Set<CallContext>,
    private readonly opts: UnaryPipelineOptions,
  ) {}

  async run(input: () => Message | Promise<Message>): Promise<Message> {
    const { context, info } = this;
    try {
      const message = await input();
      // The client went away while the message was read: nobody is waiting for an answer.
      if (this.cancelled) throw this.cancelled;
      // What the deadline gate would refuse, checked without making the call's signal: a
      // call aborted (at shutdown) or whose deadline passed on arrival or while the message
      // was read (kDeadlineChecked).
      const aborted = context.aborted;
      if (aborted) {
        throw aborted.reason instanceof ConnectError ? aborted.reason : deadlineExceeded();
      }
      const left = context.timeoutMs();
      if (left !== undefined && left <= 0) throw deadlineExceeded();
      context.values.set(kDeadlineChecked, true);
      const res = await this.proc.chain(new PipelineRequest(this.proc, message, context));
      if (res.stream) throw new Error("an interceptor turned a unary call into a stream");
      // An interceptor that answered with headers of its own: they are the answer's. The
      // implementation's own answer carries the context's (made only if someone set one).
      if (!(res instanceof PipelineResponse && res.context === context)) {
        copyInto(res.header, context.responseHeader);
        copyInto(res.trailer, context.responseTrailer);
      }
      if (info) info.code = 0;
      return res.message;
    } catch (err) {
      throw this.shape(err);
    } finally {
      this.running.delete(context);
      // The signal also fires when the call is complete, as on the Connect router.
      context.abort(callComplete);
    }
  }

  cancel(): ConnectError {
    if (this.cancelled) return this.cancelled;
    const reason = cancelReason(this.context);
    this.cancelled = reason;
    // Whatever still runs is past waiting for: a read the client abandoned may never end.
    this.running.delete(this.context);
    this.context.abort(reason);
    return reason;
  }

  /** The API error of anything that failed, recorded as the call's code. */
  private shape(err: unknown): ConnectError {
    const { opts, proc } = this;
    // An AbortError (a read stopped by a signal) is CANCELED, as connect has it.
    const e =
      err instanceof DOMException && err.name === "AbortError" ? ConnectError.from(err) : err;
    const ce = toApiError(e, opts.domain, (msg, fields) =>
      opts.log(msg, { ...fields, rpc: proc.rpc }),
    );
    if (this.info) this.info.code = ce.code;
    return ce;
  }
}

function copyInto(from: Headers, to: Headers): void {
  if (from === to) return;
  to.forEach((_, key) => {
    to.delete(key);
  });
  from.forEach((value, key) => {
    to.set(key, value);
  });
}

/**
 * The UnaryRequest the interceptors see; its signal is the context's, made when read. A
 * class for the reason CallContext is one: a getter in a per-call literal costs a hidden class
 * per call, and the call's objects outlived scavenges with it.
 */
class PipelineRequest implements UnaryRequest {
  readonly stream = false as const;
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly requestMethod: string;
  readonly url: string;
  readonly contextValues: ContextValues;

  constructor(
    proc: Procedure,
    readonly message: Message,
    readonly context: CallContext,
  ) {
    this.service = proc.service;
    this.method = proc.method;
    this.requestMethod = context.requestMethod;
    this.url = context.url;
    this.contextValues = context.values;
  }

  /** The context's request headers, made when read (call-context.ts). */
  get header(): Headers {
    return this.context.requestHeader;
  }

  get signal(): AbortSignal {
    return this.context.signal;
  }
}

/**
 * The implementation's answer as the interceptors see it: its headers and trailers are the
 * context's, made when read, so that an answer nobody adds a header to makes none.
 */
class PipelineResponse implements UnaryResponse {
  readonly stream = false as const;

  constructor(
    readonly service: DescService,
    readonly method: DescMethodUnary,
    readonly message: Message,
    readonly context: CallContext,
  ) {}

  get header(): Headers {
    return this.context.responseHeader;
  }

  get trailer(): Headers {
    return this.context.responseTrailer;
  }
}

/**
 * A request header of a call as `req.header.get(name)` gives it, without making the call's
 * Headers when the request is the pipeline's own and nobody has read them (the access check
 * reads the Authorization header of every call). `name` in lower case.
 */
export function requestHeaderOf(req: { readonly header: Headers }, name: string): string | null {
  return req instanceof PipelineRequest
    ? req.context.requestHeaderValue(name)
    : req.header.get(name);
}
