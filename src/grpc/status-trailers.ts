import { type Code, ConnectError } from "@connectrpc/connect";
import { toApiError } from "../errors.js";
import { grpcStatusFields } from "../pipeline/connect-protocol.js";

/**
 * The gRPC status trailers of an error, as a plain record: `grpc-status`, `grpc-message`
 * and, with its details (ErrorInfo first), `grpc-status-details-bin`. gRPC-Web carries the
 * same fields, in headers or in its trailer frame.
 */
export function statusTrailers(err: ConnectError): Record<string, string> {
  const out: Record<string, string> = {};
  grpcStatusFields(err).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

/**
 * The API error for a status the protocol layer raised before any interceptor ran: the same
 * code and message, with the ErrorInfo every error carries (an INTERNAL keeps only a generic
 * message, as toApiError has it).
 */
export function protocolError(code: Code, message: string, domain: string): ConnectError {
  return toApiError(new ConnectError(message, code), domain, () => undefined);
}
