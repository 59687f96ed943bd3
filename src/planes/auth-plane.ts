import type { FastifyInstance } from "fastify";
import { type AccessControl, createAccessControl } from "../auth/access-interceptor.js";
import { type Authorizer, createAuthorizer } from "../auth/authorizer.js";
import { createKeyRing, type KeyRing } from "../auth/keyring.js";
import { createUpstream } from "../auth/login/upstream.js";
import { oauthRoutes } from "../auth/oauth/oauth-routes.js";
import { signInProviderRoutes } from "../auth/oauth/sign-in-providers.js";
import { createOidcVerifier, type OidcVerifier } from "../auth/oidc/oidc-verifier.js";
import {
  createTokenIssuer,
  createTokenVerifier,
  type TokenIssuer,
  type TokenVerifier,
} from "../auth/tokens.js";
import { wellKnownRoutes } from "../auth/well-known-routes.js";
import type { Config } from "../config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Store } from "../store/store.js";
import type { Plane } from "./planes.js";

/** What the auth plane is built from. */
export interface AuthDeps {
  config: Config;
  store: Store;
  now: () => number;
  app: FastifyInstance;
  metrics: Metrics;
  /** DNS TXT lookups for domain claims (ServerDeps.resolveTxt). */
  resolveTxt?: ((name: string) => Promise<string[][]>) | undefined;
}

/** AuthPlane is who a caller is and what they may do, and how people sign in. */
export interface AuthPlane extends Plane {
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
 * Open access: tokens the auth URL issues for the base URL, decisions against the store, the
 * discovery and JWKS routes, and people's sign-in (Gatehouse as an OAuth server for its own
 * clients, and as an OIDC client of the login provider or an organization's provider).
 */
export async function openAuthPlane(deps: AuthDeps): Promise<AuthPlane> {
  const { config, store, now, app, metrics } = deps;
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
    onRejectedToken: (reason, reqId) => app.log.info({ reqId, reason }, "bearer token rejected"),
    onDecision: (outcome) => metrics.authorization(outcome),
  });
  const oidc = createOidcVerifier({
    allowInsecureLoopback: config.allowInsecureLoopbackIssuers,
    now,
    onStaleKeys: (issuer, err) =>
      app.log.warn({ issuer, reason: err.reason }, "OIDC issuer unreachable; using cached keys"),
  });
  await app.register(wellKnownRoutes, {
    authUrl: config.authUrl,
    keyRing,
    loginName: config.loginIssuer === "" ? "" : config.loginName,
  });
  await app.register(oauthRoutes, {
    config,
    store,
    tokens,
    verifier,
    upstream: createUpstream({
      authUrl: config.authUrl,
      allowInsecureLoopback: config.allowInsecureLoopbackIssuers,
      allowPrivateAddresses: config.allowPrivateIssuerAddresses,
      now,
      warn: (fields, msg) => app.log.warn(fields, msg),
    }),
    now,
    log: (fields, msg) => app.log.info(fields, msg),
    logError: (fields, msg) => app.log.error(fields, msg),
    onLogin: (outcome) => metrics.token("login", outcome),
    ...(deps.resolveTxt ? { resolveTxt: deps.resolveTxt } : {}),
  });
  // An organization's provider found by its name, for the console's sign-in page.
  await app.register(signInProviderRoutes, { store, authUrl: config.authUrl });
  return { keyRing, tokens, verifier, authorizer, access, oidc };
}
