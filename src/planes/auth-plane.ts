import type { FastifyInstance } from "fastify";
import { type AccessParts, createAccessParts } from "../auth/access-parts.js";
import { createUpstream } from "../auth/login/upstream.js";
import { oauthRoutes } from "../auth/oauth/oauth-routes.js";
import { signInProviderRoutes } from "../auth/oauth/sign-in-providers.js";
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

/** AuthPlane is who a caller is and what they may do (AccessParts), and how people sign in. */
export interface AuthPlane extends Plane, AccessParts {}

/**
 * Open access: tokens the auth URL issues for the base URL, decisions against the store, the
 * discovery and JWKS routes, and people's sign-in (Gatehouse as an OAuth server for its own
 * clients, and as an OIDC client of the login provider or an organization's provider).
 */
export async function openAuthPlane(deps: AuthDeps): Promise<AuthPlane> {
  const { config, store, now, app, metrics } = deps;
  const parts = await createAccessParts({
    config,
    store,
    now,
    metrics,
    logInfo: (fields, msg) => app.log.info(fields, msg),
    logWarn: (fields, msg) => app.log.warn(fields, msg),
  });
  const { keyRing, tokens, verifier } = parts;
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
  return parts;
}
