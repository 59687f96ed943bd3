import { once } from "node:events";
import { type DescMethod, type DescService, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type Code,
  ConnectError,
  type ContextValues,
  createMethodImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  invokeUnaryImplementation,
  transformInvokeImplementation,
} from "@connectrpc/connect/protocol";
import * as grpc from "@grpc/grpc-js";
import { CallContext, callComplete, cancelReason, runningCalls } from "../call-context.js";
import { codeName } from "../errors.js";
import type { ServiceRegistration } from "../service-registration.js";
import { refuseDroppedProtoKey } from "../services/string-rules.js";
import { statusTrailers } from "./status-trailers.js";

/** Options of createNativeGrpcServer. */
export interface NativeGrpcOptions {
  /** The same implementations the one-port server serves. */
  registrations: readonly ServiceRegistration[];
  /** The same interceptors: errors, access control, then the deployment's own. */
  interceptors: readonly Interceptor[];
  /** The request id of a call: its X-Request-Id if well formed, else a new one. */
  requestId: (given: string | undefined) => string;
  /** Per-call values (the call info: connection and request id). */
  contextValues: (call: { peer: string; requestId: string }) => ContextValues;
  /** Messages at most this large, after decompression (API.md "Limits"). */
  readMaxBytes: number;
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** Aborted at shutdown: calls still running end. */
  shutdownSignal: AbortSignal;
  /** One line per call, as the one-port server writes. */
  log: (fields: { reqId: string; method: string; code: string; durationMs: number }) => void;
}

/** A grpc-js server bound to its own port. */
export interface NativeGrpcServer {
  /** Bind to host:port (0: a free one); resolves to the port. */
  listen(host: string, port: number): Promise<number>;
  close(graceMs: number): Promise<void>;
}

/**
 * gRPC served by `@grpc/grpc-js`'s own server, on a port of its own: the service definitions are
 * built from the protobuf-es descriptors (binary serialization), and every call runs the same
 * ServiceImpl through the same Connect interceptors as the one-port server, so authorization,
 * errors and their google.rpc.Status details are the same. grpc-js does the HTTP/2 and gRPC
 * framing, deadlines, compression and message size limits, and answers unknown methods with
 * UNIMPLEMENTED.
 */
export function createNativeGrpcServer(opts: NativeGrpcOptions): NativeGrpcServer {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": opts.readMaxBytes,
    "grpc.max_send_message_length": -1,
  });
  const interceptors = [...opts.interceptors];
  const running = runningCalls(opts.shutdownSignal);
  for (const { service, impl } of opts.registrations) {
    const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      if (typeof fn !== "function") continue;
      const spec = createMethodImplSpec(method, fn.bind(impl) as never);
      definition[method.name] = {
        path: `/${service.typeName}/${method.name}`,
        requestStream:
          method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
        responseStream:
          method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
        // biome-ignore lint/suspicious/noExplicitAny: grpc-js passes the message as it got it
        requestSerialize: (m: any) => Buffer.from(toBinary(method.input, m)),
        requestDeserialize: (b: Buffer) => {
          const m = fromBinary(method.input, b);
          try {
            refuseDroppedProtoKey(method.input, m, b);
          } catch (e) {
            // grpc-js would answer a throw here INTERNAL: the handler refuses it instead.
            refused.set(m, e);
          }
          return m;
        },
        // biome-ignore lint/suspicious/noExplicitAny: the implementation's normalized message
        responseSerialize: (m: any) => {
          const bytes = toBinary(method.output, m);
          return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        },
        responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
        originalName: method.localName,
      };
      handlers[method.name] = handlerFor(service, method, spec, interceptors, running, opts);
    }
    server.addService(definition as grpc.ServiceDefinition, handlers);
  }
  return {
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        const creds = opts.tls
          ? grpc.ServerCredentials.createSsl(null, [
              { cert_chain: opts.tls.cert, private_key: opts.tls.key },
            ])
          : grpc.ServerCredentials.createInsecure();
        server.bindAsync(
          `${host.includes(":") ? `[${host}]` : host}:${port}`,
          creds,
          (err, bound) => (err ? reject(err) : resolve(bound)),
        );
      }),
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}

// Request messages that decoding changed in a way the caller must hear of (a dropped
// `__proto__` map key), with the error to answer them with.
const refused = new WeakMap<object, unknown>();

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> &
  grpc.ServerWritableStream<unknown, unknown> & {
    pause(): void;
    resume(): void;
    isPaused(): boolean;
  };
type SurfaceCall = grpc.ServerUnaryCall<unknown, unknown> | AnyCall;

function handlerFor(
  service: DescService,
  method: DescMethod,
  spec: MethodImplSpec,
  interceptors: Interceptor[],
  running: Set<CallContext>,
  opts: NativeGrpcOptions,
): grpc.UntypedHandleCall {
  const rpc = `${service.typeName}/${method.name}`;
  const begin = (call: SurfaceCall) => {
    const started = performance.now();
    // A plain list: the context makes the one Headers object of the call from it.
    const header: [string, string][] = [];
    let given: string | undefined;
    for (const [k, v] of Object.entries(call.metadata.getMap())) {
      const value = typeof v === "string" ? v : Buffer.from(v).toString("base64");
      header.push([k, value]);
      if (k === "x-request-id") given = value;
    }
    const requestId = opts.requestId(given);
    const deadline = call.getDeadline();
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    const context = new CallContext({
      service,
      method,
      protocolName: "grpc",
      requestMethod: "POST",
      url: `/${rpc}`,
      header,
      values: opts.contextValues({ peer: call.getPeer(), requestId }),
      timeoutMs: Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined,
    });
    // grpc-js says "cancelled" when a call's stream closes, answered or not: the listener goes
    // when the call is answered. It must: grpc-js's call objects outlive a scavenge (about
    // 4.5 kB a call with a bare grpc-js server), and whatever they point to is promoted with them.
    // grpc-js also cancels a call whose deadline passed, on its own timer (cancelReason).
    const onCancelled = () => context.abort(cancelReason(context));
    call.on("cancelled", onCancelled);
    running.add(context);
    // 0 is OK, which Code does not name. Called before the answer is handed to grpc-js.
    const finish = (code: Code | 0) => {
      call.off("cancelled", onCancelled);
      running.delete(context);
      // Fires the signal, if a handler made it, and stops its deadline timer.
      context.abort(callComplete);
      opts.log({
        reqId: requestId,
        method: rpc,
        code: codeName(code),
        durationMs: Math.round((performance.now() - started) * 100) / 100,
      });
    };
    return { context, finish, requestId };
  };

  if (method.methodKind === "unary") {
    return (
      call: grpc.ServerUnaryCall<unknown, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      const { context, finish } = begin(call);
      const refusal = refused.get(call.request as object);
      (refusal === undefined
        ? invokeUnaryImplementation(spec as never, context, call.request as never, interceptors)
        : Promise.reject(refusal)
      ).then(
        (output) => {
          finish(0);
          sendHeaders(call, context);
          const trailer = metadataOf(context.responseTrailer);
          if (trailer) callback(null, output, trailer);
          else callback(null, output);
        },
        (err: unknown) => {
          const e = ConnectError.from(err);
          finish(e.code);
          callback(serviceError(e, context));
        },
      );
    };
  }
  // Streams: the requests as an async iterable (grpc-js has deserialized them), the answers
  // written as they come, with back-pressure.
  const stream = async (call: AnyCall, callback?: grpc.sendUnaryData<unknown>) => {
    const { context, finish } = begin(call);
    const requests: AsyncIterable<unknown> =
      method.methodKind === "server_streaming" ? single(call.request) : messagesOf(call);
    try {
      let headersSent = false;
      let last: unknown;
      for await (const out of transformInvokeImplementation(
        spec,
        context,
        interceptors,
      )(requests as never)) {
        if (!headersSent) {
          sendHeaders(call, context);
          headersSent = true;
        }
        if (callback) {
          last = out;
          continue;
        }
        if (!call.write(out)) await once(call, "drain");
      }
      finish(0);
      const trailer = metadataOf(context.responseTrailer);
      if (callback) callback(null, last, trailer);
      else call.end(trailer);
    } catch (err) {
      const e = ConnectError.from(err);
      finish(e.code);
      if (callback) callback(serviceError(e, context));
      else call.emit("error", serviceError(e, context));
    }
  };
  return stream as unknown as grpc.UntypedHandleCall;
}

async function* single<T>(value: T): AsyncIterable<T> {
  yield value;
}

/**
 * The messages a client streams, from the call's events (the same on every Node line), at
 * most 16 waiting: past that the call is paused, so a flood cannot fill memory.
 */
function messagesOf(call: AnyCall): AsyncIterable<unknown> {
  const queue: unknown[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  call.on("data", (m: unknown) => {
    queue.push(m);
    if (queue.length >= 16) call.pause();
    notify();
  });
  call.on("end", () => {
    ended = true;
    notify();
  });
  call.on("error", (e: unknown) => {
    failure = e;
    notify();
  });
  return {
    [Symbol.asyncIterator]: () => ({
      async next(): Promise<IteratorResult<unknown>> {
        for (;;) {
          if (queue.length > 0) {
            const value = queue.shift();
            if (queue.length < 8 && call.isPaused()) call.resume();
            return { value, done: false };
          }
          if (failure !== undefined) throw failure;
          if (ended) return { value: undefined, done: true };
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      },
      async return(): Promise<IteratorResult<unknown>> {
        return { value: undefined, done: true };
      },
    }),
  };
}

function sendHeaders(call: SurfaceCall, context: HandlerContext) {
  const md = metadataOf(context.responseHeader);
  if (md) call.sendMetadata(md);
}

/** Headers as grpc-js metadata (binary `-bin` values decoded); undefined when empty. */
function metadataOf(headers: Headers): grpc.Metadata | undefined {
  let md: grpc.Metadata | undefined;
  headers.forEach((v, k) => {
    md ??= new grpc.Metadata();
    if (k.endsWith("-bin")) md.add(k, Buffer.from(v, "base64"));
    else md.add(k, v);
  });
  return md;
}

/** A ConnectError as grpc-js sends it: code, message, and the status details in trailers. */
function serviceError(err: ConnectError, context: HandlerContext): Partial<grpc.StatusObject> {
  const md = metadataOf(context.responseTrailer) ?? new grpc.Metadata();
  const details = statusTrailers(err)["grpc-status-details-bin"];
  if (details) md.set("grpc-status-details-bin", Buffer.from(details, "base64"));
  return { code: err.code as number, details: err.rawMessage, metadata: md };
}
