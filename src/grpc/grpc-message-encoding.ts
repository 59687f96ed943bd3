import type { Code } from "@connectrpc/connect";
import type { FastifyInstance, RawServerBase } from "fastify";
import { grpcParseErrorTrailers } from "./request-parse-errors.js";
import { protocolError, statusTrailers } from "./status-trailers.js";

/**
 * Percent-encode a status message the way the gRPC HTTP/2 spec asks: only `%` and bytes
 * outside printable ASCII (0x20-0x7E) are encoded, as UTF-8.
 */
export function encodeGrpcMessage(message: string): string {
  // Fast path: nothing to encode.
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * Add a hook to the app (not a plugin: hooks of a plugin stay inside its own encapsulated
 * context, away from the connect routes) that rewrites the `grpc-message` trailer of gRPC responses into the spec's
 * minimal percent-encoding. connect-es encodes it with encodeURIComponent (`:` becomes
 * `%3A`), and grpc-js decodes with decodeURI, which leaves `%3A` in place: grpc-js stubs
 * would read `Invalid argument%3A name%3A ...`. Every client decodes the minimal form.
 */
export function addGrpcMessageEncoding<S extends RawServerBase>(
  app: FastifyInstance<S>,
  domain: string,
): void {
  // A callback hook, not an async one: every request passes it, and most are not gRPC.
  app.addHook("onRequest", (req, reply, done) => {
    const type = req.headers["content-type"];
    // gRPC-Web carries its trailers in the body and its clients decode fully.
    if (
      typeof type !== "string" ||
      !type.startsWith("application/grpc") ||
      type.startsWith("application/grpc-web")
    ) {
      return done();
    }
    const raw = reply.raw as unknown as { addTrailers(t: Record<string, string>): void };
    const addTrailers = raw.addTrailers.bind(raw);
    raw.addTrailers = (trailers) => {
      const message = trailers["grpc-message"];
      if (message !== undefined) {
        const decoded = safeDecode(message);
        // A request message the library could not decode is INVALID_ARGUMENT, not INTERNAL.
        const fixed =
          grpcParseErrorTrailers(trailers["grpc-status"], decoded, domain) ??
          withErrorInfo(trailers, decoded, domain);
        Object.assign(trailers, fixed);
        trailers["grpc-message"] = encodeGrpcMessage(
          fixed ? safeDecode(fixed["grpc-message"]!) : decoded,
        );
      }
      addTrailers(trailers);
    };
    done();
  });
}

/**
 * The trailers of an error the protocol layer raised before any interceptor ran (bad
 * compression, a bad grpc-timeout, a truncated frame, ...), given the ErrorInfo every error
 * carries (API.md: every error, every protocol). Undefined when it has details already.
 */
function withErrorInfo(
  trailers: Record<string, string>,
  message: string,
  domain: string,
): Record<string, string> | undefined {
  const status = Number(trailers["grpc-status"]);
  if (!status || trailers["grpc-status-details-bin"] !== undefined) return undefined;
  return statusTrailers(protocolError(status as Code, message, domain));
}

/** Decode a percent-encoded grpc-message, or leave it as it is if it is not valid. */
export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
