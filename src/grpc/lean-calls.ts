import type { DescMessage, DescMethod, DescService, Message } from "@bufbuild/protobuf";
import { ConnectError, createMethodImplSpec, type MethodImplSpec } from "@connectrpc/connect";
import { toApiError } from "../errors.js";
import { type MethodSerializationLookup, methodSerializers } from "../pipeline/connect-protocol.js";
import type { ServiceRegistration } from "../service-registration.js";
import { refuseDroppedProtoKey, refuseProtoKeyInJsonText } from "../validation/string-rules.js";
import { requestParseError } from "./request-parse-errors.js";
import { protocolError } from "./status-trailers.js";

// What the lean gRPC and Connect paths (unary-grpc.ts, unary-connect.ts) share: the table of
// methods they serve, and the router's own settings they must answer by.

/** A unary method a lean path serves, ready to invoke. */
export interface LeanMethod {
  /** `package.Service/Method`. */
  readonly rpc: string;
  readonly service: DescService;
  readonly method: DescMethod;
  readonly spec: MethodImplSpec;
  /** The router's own serializers of the method (binary and JSON), with its limits. */
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
}

/**
 * The unary methods the registrations implement, by request path (`/package.Service/Method`).
 * A method missing from its implementation is left out: the router answers it UNIMPLEMENTED.
 */
export function leanMethods(
  registrations: readonly ServiceRegistration[],
  readMaxBytes: number,
): Map<string, LeanMethod> {
  const methods = new Map<string, LeanMethod>();
  for (const { service, impl } of registrations) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      const rpc = `${service.typeName}/${method.name}`;
      const spec = createMethodImplSpec(method, fn.bind(impl) as never);
      const serialization = methodSerializers(method, readMaxBytes);
      methods.set(`/${rpc}`, { rpc, service, method, spec, serialization });
    }
  }
  return methods;
}

/**
 * Decode a request message with the router's serializer. One that does not decode is
 * INVALID_ARGUMENT, as the app's hooks make the router's answer (request-parse-errors.ts).
 */
export function parseRequest(m: LeanMethod, binary: boolean, bytes: Uint8Array, domain: string) {
  let message: Message;
  try {
    message = m.serialization.getI(binary).parse(bytes);
  } catch (e) {
    const err = ConnectError.from(e);
    throw requestParseError(err.rawMessage, domain) ?? err;
  }
  // A map key `__proto__` is refused, not dropped without a word (string-rules.ts).
  try {
    if (binary) refuseDroppedProtoKey(m.method.input, message, bytes);
    else refuseProtoKeyInJsonText(bytes);
  } catch (e) {
    throw toApiError(e, domain, () => undefined);
  }
  return message;
}

/**
 * An error as the caller gets it: errors from below the interceptors (frames, sizes,
 * encodings, messages that do not decode) get the ErrorInfo every error carries, as the app's
 * hooks give them on the router's path, and keep their metadata. Errors from the interceptors
 * already have it.
 */
export function withErrorInfo(err: ConnectError, domain: string): ConnectError {
  if (err.details.length > 0) return err;
  const shaped = protocolError(err.code, err.rawMessage, domain);
  err.metadata.forEach((v, k) => {
    shaped.metadata.set(k, v);
  });
  return shaped;
}
