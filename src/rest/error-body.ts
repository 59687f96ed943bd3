import { create, createRegistry, type JsonObject, toJson } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

// How an API error is rendered over REST (API.md "Errors"): the HTTP status of its code and
// its JSON body, a google.rpc.Status. The errors themselves are made in src/errors.ts, for
// every protocol; this is REST's rendering of them.

/** Registry of the google.rpc detail types, for decoding and printing error details. */
export const errorDetailsRegistry = createRegistry(file_google_rpc_error_details);

const httpStatusByCode: Record<number, number> = {
  [Code.InvalidArgument]: 400,
  [Code.FailedPrecondition]: 400,
  [Code.OutOfRange]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  [Code.ResourceExhausted]: 429,
  [Code.Canceled]: 499,
  [Code.Unimplemented]: 501,
  [Code.Unavailable]: 503,
  [Code.DeadlineExceeded]: 504,
};

/** The HTTP status of a gRPC code, per API.md. */
export function httpStatusOf(code: Code): number {
  return httpStatusByCode[code] ?? 500;
}

/** Encode an error as a google.rpc.Status message (what REST bodies are made of). */
export function toStatus(ce: ConnectError) {
  return create(StatusSchema, {
    code: ce.code,
    message: ce.rawMessage,
    details: ce.details.map((d) =>
      "desc" in d
        ? anyPack(d.desc, create(d.desc, d.value))
        : { typeUrl: `type.googleapis.com/${d.type}`, value: d.value },
    ),
  });
}

/** Render an error as the REST body of API.md: `{code, message, details: [{"@type", ...}]}`. */
export function toRestErrorBody(ce: ConnectError): JsonObject {
  return toJson(StatusSchema, toStatus(ce), { registry: errorDetailsRegistry }) as JsonObject;
}
