/** The schema URN of a SCIM error body (RFC 7644 section 3.12). */
export const errorSchema = "urn:ietf:params:scim:api:messages:2.0:Error";

/** The `scimType`s of RFC 7644 section 3.12 that Gatehouse answers with. */
export type ScimType =
  | "invalidFilter"
  | "tooMany"
  | "uniqueness"
  | "mutability"
  | "invalidSyntax"
  | "invalidPath"
  | "noTarget"
  | "invalidValue"
  | "invalidVers";

/**
 * ScimError is a refusal the SCIM plane answers with its own error body: an HTTP status, a
 * `scimType` where RFC 7644 names one, and a detail for the client's operator (never a secret,
 * never anything of another organization).
 */
export class ScimError extends Error {
  override name = "ScimError";
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
  ) {
    super(detail);
  }
}

/** 400 with a scimType: the request is malformed or names what cannot be. */
export function badRequest(scimType: ScimType, detail: string): ScimError {
  return new ScimError(400, detail, scimType);
}

/** The error body of a refusal (RFC 7644 section 3.12: status is a string). */
export function errorBody(err: ScimError): Record<string, unknown> {
  return {
    schemas: [errorSchema],
    status: String(err.status),
    ...(err.scimType ? { scimType: err.scimType } : {}),
    detail: err.detail,
  };
}
