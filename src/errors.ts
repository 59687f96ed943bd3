import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequest_FieldViolationSchema,
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  ResourceInfoSchema,
} from "../gen/google/rpc/error_details_pb.js";
import { StoreError } from "./store/store.js";

/** A failing field and why, as it goes into google.rpc.BadRequest. */
export interface FieldViolation {
  field: string;
  description: string;
}

/**
 * Create an INVALID_ARGUMENT error: message `Invalid argument: <field>: <reason>` for the
 * first violation, and a BadRequest detail with one entry per failing field.
 */
export function invalidArgument(violations: FieldViolation[]): ConnectError {
  const first = violations[0] ?? { field: "request", description: "invalid" };
  return new ConnectError(
    `Invalid argument: ${first.field}: ${first.description}`,
    Code.InvalidArgument,
    undefined,
    [
      {
        desc: BadRequestSchema,
        value: {
          fieldViolations: violations.map((v) =>
            create(BadRequest_FieldViolationSchema, { field: v.field, description: v.description }),
          ),
        },
      },
    ],
  );
}

/** Create an INVALID_ARGUMENT error for a single field. */
export function invalidField(field: string, description: string): ConnectError {
  return invalidArgument([{ field, description }]);
}

/**
 * Create the FAILED_PRECONDITION error for deleting a group that still has children of
 * `kind` (repos, groups, identities, roles, identityProviders, tags).
 */
export function notEmpty(kind: string, what = "group"): ConnectError {
  return new ConnectError(
    `Precondition failed: cannot delete ${what} with child ${kind}`,
    Code.FailedPrecondition,
    undefined,
    [
      {
        desc: PreconditionFailureSchema,
        value: {
          violations: [
            {
              type: "RESOURCE_NOT_EMPTY",
              subject: kind,
              description: `the ${what} still has child ${kind}`,
            },
          ],
        },
      },
    ],
  );
}

/** Create a FAILED_PRECONDITION error with a plain message. */
export function failedPrecondition(message: string): ConnectError {
  return new ConnectError(`Precondition failed: ${message}`, Code.FailedPrecondition);
}

/**
 * Create the NOT_FOUND error for a resource kind and uid: every NOT_FOUND of a resource is
 * made here, and carries google.rpc.ResourceInfo {resource_type: the kind (`role binding`),
 * resource_name: the uid} after its ErrorInfo, on every protocol. Only a caller the access
 * interceptor let through (one who could see the resource) ever gets it: a stranger gets
 * PERMISSION_DENIED, whether the uid exists or not.
 */
export function notFound(kind: string, uid: string): ConnectError {
  return new ConnectError(`Not found: ${kind} ${JSON.stringify(uid)}`, Code.NotFound, undefined, [
    { desc: ResourceInfoSchema, value: { resourceType: kind, resourceName: uid } },
  ]);
}

/** Create an ALREADY_EXISTS error. */
export function alreadyExists(message: string): ConnectError {
  return new ConnectError(`Already exists: ${message}`, Code.AlreadyExists);
}

/** Create the PERMISSION_DENIED error; it never says whether the resource exists. */
export function permissionDenied(capability: string): ConnectError {
  return new ConnectError(
    `Permission denied: the caller lacks ${capability} on the resource or it does not exist`,
    Code.PermissionDenied,
  );
}

/**
 * Create a PERMISSION_DENIED error for a rule of the server's own, not a capability: `reason`
 * is its ErrorInfo reason (`ORGANIZATION_CREATION_RESTRICTED`), `why` the sentence a person
 * reads.
 */
export function deniedBecause(reason: string, why: string): ConnectError {
  // The domain is filled in by toApiError, which knows it.
  const info = { desc: ErrorInfoSchema, value: { reason, domain: "" } };
  return new ConnectError(`Permission denied: ${why}`, Code.PermissionDenied, undefined, [info]);
}

/** Create the UNAUTHENTICATED error. */
export function unauthenticated(message = "a valid bearer token is required"): ConnectError {
  return new ConnectError(`Unauthenticated: ${message}`, Code.Unauthenticated);
}

/**
 * Create the UNAUTHENTICATED error for a bearer token that was presented and refused: its
 * ErrorInfo reason says why (`TOKEN_EXPIRED`, `WRONG_AUDIENCE`, ...), and the RFC 6750
 * challenge (`WWW-Authenticate: Bearer error="invalid_token", error_description=...`)
 * travels as metadata: a REST header, a gRPC or Connect response header.
 */
export function invalidToken(reason: string, description: string): ConnectError {
  const metadata = new Headers({
    "www-authenticate": `Bearer error="invalid_token", error_description="${description}"`,
  });
  // The domain is filled in by toApiError, which knows it.
  const info = { desc: ErrorInfoSchema, value: { reason, domain: "" } };
  return new ConnectError(`Unauthenticated: ${description}`, Code.Unauthenticated, metadata, [
    info,
  ]);
}

/** Map a store error to the API error a caller sees. */
export function fromStoreError(err: StoreError): ConnectError {
  switch (err.kind) {
    case "not_found":
      return err.resource
        ? notFound(err.resource.type, err.resource.name)
        : new ConnectError(`Not found: ${err.message}`, Code.NotFound);
    case "already_exists":
      return alreadyExists(err.message);
    case "not_empty":
      return notEmpty(err.childKind ?? "resources", err.parentKind ?? "group");
    case "failed_precondition":
      return failedPrecondition(err.message);
    case "conflict":
      return new ConnectError(`Aborted: ${err.message}`, Code.Aborted);
    case "unavailable":
      return new ConnectError("Unavailable: the database is busy, retry", Code.Unavailable);
    case "invalid_text":
      return new ConnectError(
        "Invalid argument: text may not contain the NUL character (U+0000)",
        Code.InvalidArgument,
      );
    case "storage_full":
      return new ConnectError(
        "Unavailable: the database's storage is full; retry once space is freed",
        Code.Unavailable,
        undefined,
        [{ desc: ErrorInfoSchema, value: { reason: "STORAGE_FULL", domain: "" } }],
      );
  }
}

/** Logger for causes that must not reach the caller. */
export type ErrorLogger = (message: string, fields: Record<string, unknown>) => void;

/**
 * Turn anything thrown by a handler into the ConnectError the caller sees, with ErrorInfo
 * {reason, domain} as its first detail. Store errors map through fromStoreError; anything
 * unexpected is logged with its cause and becomes a bare INTERNAL.
 */
export function toApiError(err: unknown, domain: string, log: ErrorLogger): ConnectError {
  let ce: ConnectError;
  if (err instanceof StoreError) {
    ce = fromStoreError(err);
  } else if (err instanceof ConnectError) {
    ce = err;
    if (ce.code === Code.Internal || ce.code === Code.Unknown) {
      if (!hasErrorInfo(ce)) {
        log("internal error", { error: describe(err) });
        ce = new ConnectError("Internal error", Code.Internal);
      }
    }
  } else {
    log("internal error", { error: describe(err) });
    ce = new ConnectError("Internal error", Code.Internal);
  }
  if (hasErrorInfo(ce)) return withDomain(ce, domain);
  const info = {
    desc: ErrorInfoSchema,
    value: { reason: Code[ce.code] ? codeName(ce.code) : "UNKNOWN", domain },
  };
  const rest = ce.details.filter((d) => "desc" in d);
  return new ConnectError(ce.rawMessage, ce.code, ce.metadata, [info, ...(rest as never[])]);
}

/** Fill in the domain of an ErrorInfo made where the domain was not known. */
function withDomain(ce: ConnectError, domain: string): ConnectError {
  const [first, ...rest] = ce.details;
  if (!first || !("desc" in first) || (first.value as { domain?: string }).domain !== "") {
    return ce;
  }
  const info = { desc: ErrorInfoSchema, value: { ...(first.value as object), domain } };
  return new ConnectError(ce.rawMessage, ce.code, ce.metadata, [info, ...(rest as never[])]);
}

function hasErrorInfo(ce: ConnectError): boolean {
  const first = ce.details[0];
  if (!first) return false;
  return "desc" in first
    ? first.desc.typeName === ErrorInfoSchema.typeName
    : first.type === ErrorInfoSchema.typeName;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.stack ?? `${err.name}: ${err.message}`;
  return String(err);
}

/** The canonical name of a code, e.g. `INVALID_ARGUMENT`; 0 (success) is `OK`. */
export function codeName(code: Code | 0): string {
  if (code === 0) return "OK";
  return (Code[code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}
