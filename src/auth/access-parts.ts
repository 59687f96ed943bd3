import type { Config } from "../config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Store } from "../store/store.js";
import { type AccessControl, createAccessControl } from "./access-interceptor.js";
import { type Authorizer, createAuthorizer } from "./authorizer.js";
import { createKeyRing, type KeyRing } from "./keyring.js";
import { createOidcVerifier, type OidcVerifier } from "./oidc/oidc-verifier.js";
import {
  createTokenIssuer,
  createTokenVerifier,
  type TokenIssuer,
  type TokenVerifier,
} from "./tokens.js";

/** What access is built from. */
export interface AccessPartsDeps {
  config: Pick<Config, "authUrl" | "baseUrl" | "allowInsecureLoopbackIssuers">;
  store: Store;
  now: () => number;
  metrics: Pick<Metrics, "authorization">;
  /** Where a rejected bearer token is logged (its reason, never the token). */
  logInfo: (fields: Record<string, unknown>, msg: string) => void;
  /** Where an unreachable OIDC issuer is logged. */
  logWarn: (fields: Record<string, unknown>, msg: string) => void;
}

/** AccessParts is who a caller is and what they may do: the keys, tokens and decisions. */
export interface AccessParts {
  /** The signing keys, in the store: rotation and the published JWKS. */
  keyRing: KeyRing;
  /** Signs Gatehouse tokens (iss: the auth URL) with the newest key of the ring. */
  tokens: TokenIssuer;
  /** Gatehouse tokens for the base URL. */
  verifier: TokenVerifier;
  authorizer: Authorizer;
  /** The access interceptor, its refusal check before a body is read, and its guard. */
  access: AccessControl;
  /** Workload and user tokens from external issuers, for the STS exchange. */
  oidc: OidcVerifier;
}

/**
 * Create access: a signing key in the store (made if there is none), tokens the auth URL
 * issues for the base URL, and decisions against the store. The auth plane builds its routes
 * on these (src/planes/auth-plane.ts); a test serving the API in memory builds the same.
 */
export async function createAccessParts(deps: AccessPartsDeps): Promise<AccessParts> {
  const { config, store, now, metrics } = deps;
  const keyRing = createKeyRing({ store, now });
  await keyRing.ensureKey();
  const tokens = createTokenIssuer({ keyRing, issuer: config.authUrl, now });
  const verifier = createTokenVerifier({
    keyRing,
    issuer: config.authUrl,
    audience: config.baseUrl,
    now,
  });
  const authorizer = createAuthorizer(store);
  const access = createAccessControl({
    verifier,
    authorizer,
    identityExists: (uid) => store.identityExists(uid),
    sessionActive: (sid) => store.sessionActive(sid),
    tokenCutoff: (uid) => store.tokenCutoff(uid),
    onRejectedToken: (reason, reqId) => deps.logInfo({ reqId, reason }, "bearer token rejected"),
    onDecision: (outcome) => metrics.authorization(outcome),
  });
  const oidc = createOidcVerifier({
    allowInsecureLoopback: config.allowInsecureLoopbackIssuers,
    now,
    onStaleKeys: (issuer, err) =>
      deps.logWarn({ issuer, reason: err.reason }, "OIDC issuer unreachable; using cached keys"),
  });
  return { keyRing, tokens, verifier, authorizer, access, oidc };
}
