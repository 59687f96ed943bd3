import type { DescMessage, DescMethodUnary, Message } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { toApiError } from "../errors.js";
import { type MethodSerializationLookup, methodSerializers } from "../pipeline/connect-protocol.js";
import type { UnaryPipeline, UnaryProcedure } from "../pipeline/unary-invocation.js";
import type { ServiceRegistration } from "../service-registration.js";
import { refuseDroppedProtoKey, refuseProtoKeyInJsonText } from "../validation/string-rules.js";
import { requestParseError } from "./request-parse-errors.js";

// What the lean gRPC and Connect paths (unary-grpc.ts, unary-connect.ts) share: the table of
// methods they serve, and the router's own serializers they must decode and encode with.

/** A unary method a lean path serves: its procedure, and the router's serializers. */
export interface LeanMethod extends UnaryProcedure {
  /** The router's own serializers of the method (binary and JSON), with its limits. */
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
}

/**
 * The unary methods the registrations implement, by request path (`/package.Service/Method`).
 * A method missing from its implementation is left out: the router answers it UNIMPLEMENTED.
 */
export function leanMethods(
  registrations: readonly ServiceRegistration[],
  pipeline: UnaryPipeline,
  readMaxBytes: number,
): Map<string, LeanMethod> {
  const methods = new Map<string, LeanMethod>();
  for (const { service, impl } of registrations) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      const procedure = pipeline.procedure(service, method as DescMethodUnary, impl);
      methods.set(`/${procedure.rpc}`, {
        ...procedure,
        serialization: methodSerializers(method, readMaxBytes),
      });
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
