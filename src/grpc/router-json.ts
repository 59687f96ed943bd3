import type { DescMethod, JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { millisecondTimestampsIfAny } from "../json/timestamp-json.js";
import type { ServiceRegistration } from "../service-registration.js";

/** As the router is configured: a JSON field the API does not know is INVALID_ARGUMENT. */
const baseJsonOptions = { ignoreUnknownFields: false };

/**
 * Register the implementations on connect-node's router, every method with the JSON options
 * of its answer: one whose answer holds a Timestamp has it written with its millisecond
 * fraction (`...:52.000Z`, the API's format; protobuf-es writes `...:52Z`), on every protocol
 * the router speaks JSON on (Connect, its GET form, gRPC-Web and gRPC with `+json`), before
 * the answer is compressed and framed.
 *
 * protobuf-es has no option for the Timestamp's format, and the router writes a message with
 * protobuf-es's toJsonString; the one step of its JSON serialization that is ours is its text
 * encoder (connect-es's JsonSerializationOptions.textEncoder), which turns the method's JSON
 * text into bytes. Ours gives that text's Timestamps their fraction, by the method's output
 * type. The paths that write JSON themselves (REST, the lean Connect path) use a writer that
 * writes the fraction in the first place (src/json/message-json.ts); this is the router's
 * copy of the same format, held to it by test/grpc/router-json.test.ts.
 */
export function registerOnRouter(
  router: ConnectRouter,
  registrations: readonly ServiceRegistration[],
): void {
  for (const { service, impl } of registrations) {
    const options = service.methods.map(routerJsonOptions);
    // A service none of whose answers holds a Timestamp: one registration, as it always was.
    if (options.every((o) => o === undefined)) {
      router.service(service, impl);
      continue;
    }
    service.methods.forEach((method, i) => {
      const o = options[i];
      router.rpc(method as never, implementationOf(impl, method) as never, o && { jsonOptions: o });
    });
  }
}

/**
 * The router's JSON options of a unary method whose answer holds a Timestamp (undefined for
 * any other): the router's own, with a text encoder that gives each Timestamp its fraction.
 */
export function routerJsonOptions(method: DescMethod): object | undefined {
  if (method.methodKind !== "unary") return undefined;
  const fix = millisecondTimestampsIfAny(method.output);
  if (!fix) return undefined;
  const utf8 = new TextEncoder();
  // Only `encode` is called, with the text of one answer of this method (connect-es's
  // createJsonSerialization; the request's text is decoded, never encoded, on a server).
  const textEncoder = {
    encoding: utf8.encoding,
    encode: (text: string) => utf8.encode(JSON.stringify(fix(JSON.parse(text) as JsonValue))),
    encodeInto: (text: string, into: Uint8Array) => utf8.encodeInto(text, into),
  };
  return { ...baseJsonOptions, textEncoder };
}

/** The method of an implementation, bound to it; UNIMPLEMENTED as the router has it if absent. */
function implementationOf(impl: object, method: DescMethod): unknown {
  const fn = (impl as Record<string, unknown>)[method.localName];
  if (typeof fn === "function") return fn.bind(impl);
  // connect's own words for a method an implementation lacks (createServiceImplSpec).
  const message = `${method.parent.typeName}.${method.name} is not implemented`;
  return function unimplemented() {
    throw new ConnectError(message, Code.Unimplemented);
  };
}
