import type { TokenFailure } from "../tokens.js";

/** Why an external OIDC token was refused. Safe to log; never contains the token. */
export type OidcFailure =
  | TokenFailure
  /** The caller's rules do not allow this issuer, so it was not contacted. */
  | "issuer_not_allowed"
  /** The issuer or its jwks_uri is not https (nor an allowed loopback http address). */
  | "insecure_issuer"
  /** Discovery or JWKS could not be fetched and no earlier keys are cached. */
  | "issuer_unavailable"
  /** The discovery document or JWKS is malformed, or names another issuer. */
  | "bad_discovery"
  /** The identity's static keys have passed their expiration time. */
  | "keys_expired"
  /** The identity's static keys are not a JWKS of public signing keys. */
  | "bad_keys";

/**
 * OidcError is any refusal of an external OIDC token. The STS exchange answers it with
 * UNAUTHENTICATED (or PERMISSION_DENIED); `issuer_unavailable` may be logged as a warning.
 */
export class OidcError extends Error {
  override name = "OidcError";
  constructor(
    readonly reason: OidcFailure,
    /** A safe detail for logs or a field violation (never token or key material). */
    readonly detail?: string,
  ) {
    super(detail ? `OIDC token rejected: ${reason}: ${detail}` : `OIDC token rejected: ${reason}`);
  }
}
