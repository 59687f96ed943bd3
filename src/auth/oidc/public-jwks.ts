import type { JSONWebKeySet, JWK } from "jose";
import { OidcError } from "./oidc-error.js";

/** Signature algorithms accepted from external issuers: asymmetric only, never `none` or HS*. */
export const oidcAlgorithms = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
];

// Parameters that only a private or symmetric key has.
const privateParams = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const maxKeys = 100;

/** Report why `jwk` is not a public signing key, or undefined if it is one. */
function publicKeyProblem(jwk: unknown): string | undefined {
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) return "is not an object";
  const k = jwk as Record<string, unknown>;
  if (k.kty !== "RSA" && k.kty !== "EC") return "must be an RSA or EC key";
  if (privateParams.some((p) => Object.hasOwn(k, p))) return "must not contain private parts";
  if (k.use !== undefined && k.use !== "sig") return "must be a signing key";
  return undefined;
}

/**
 * Parse a JWKS document given by a user (an identity's staticKeys.issuerKeys) and check that
 * it holds only public RSA or EC keys. Throws OidcError `bad_keys`; the message names the
 * failing key by index, never its material.
 */
export function parsePublicJwks(json: string): JSONWebKeySet {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    throw new OidcError("bad_keys", "not JSON");
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new OidcError("bad_keys", "must be a JWKS with a non-empty keys array");
  }
  if (keys.length > maxKeys) throw new OidcError("bad_keys", `at most ${maxKeys} keys`);
  keys.forEach((k, i) => {
    const problem = publicKeyProblem(k);
    if (problem) throw new OidcError("bad_keys", `keys[${i}] ${problem}`);
  });
  return { keys: keys as JWK[] };
}

/**
 * Keep the usable public signing keys of an issuer's published JWKS. Unlike user input, a
 * remote JWKS is filtered rather than refused: one odd key must not lock out a whole issuer.
 */
export function publicSigningKeys(doc: Record<string, unknown>): JSONWebKeySet {
  const keys = doc.keys;
  if (!Array.isArray(keys)) throw new OidcError("bad_discovery", "the JWKS has no keys array");
  return { keys: keys.slice(0, maxKeys).filter((k) => !publicKeyProblem(k)) as JWK[] };
}
