import type { FastifyInstance } from "fastify";
import { createTokenVerifier } from "../auth/tokens.js";
import type { Config } from "../config.js";
import type { Metrics } from "../metrics/metrics.js";
import { registryNotificationRoutes } from "../registry/notification-routes.js";
import { createRegistryNames } from "../registry/registry-names.js";
import { createRegistryTokenSigner } from "../registry/registry-tokens.js";
import { registryTokenRoutes } from "../registry/token-routes.js";
import { createIdentityMatcher } from "../services/sts/identity-match.js";
import type { Store } from "../store/store.js";
import type { AuthPlane } from "./auth-plane.js";
import type { Plane } from "./planes.js";

/** What the registry plane is built from. */
export interface RegistryDeps {
  config: Config;
  store: Store;
  now: () => number;
  app: FastifyInstance;
  metrics: Metrics;
  auth: Pick<AuthPlane, "keyRing" | "authorizer" | "oidc">;
}

/**
 * Open the container registry's side: its token service (Docker Registry v2 token
 * authentication) when GATEHOUSE_REGISTRY_AUDIENCE names a registry, and the notifications
 * that keep Tags following its pushes and deletes when they have a secret.
 */
export async function openRegistryPlane(deps: RegistryDeps): Promise<Plane> {
  const { config, store, now, app, auth } = deps;
  if (config.registryService !== "") {
    await app.register(registryTokenRoutes, {
      authUrl: config.authUrl,
      services: [config.registryService, config.registryAudience],
      // A Gatehouse token of either audience is a credential.
      verifier: createTokenVerifier({
        keyRing: auth.keyRing,
        issuer: config.authUrl,
        audience: [config.baseUrl, config.registryAudience, config.registryService],
        now,
      }),
      identityExists: (uid) => store.identityExists(uid),
      sessionActive: (sid) => store.sessionActive(sid),
      tokenCutoff: (uid) => store.tokenCutoff(uid),
      matchIdentity: createIdentityMatcher({ store, oidc: auth.oidc, config }),
      touchIdentity: (uid) => store.touchIdentity(uid, now()),
      names: createRegistryNames(store),
      authorizer: auth.authorizer,
      signer: createRegistryTokenSigner({ keyRing: auth.keyRing, issuer: config.authUrl, now }),
      log: (fields, msg) => app.log.info(fields, msg),
      onOutcome: (outcome) => deps.metrics.token("registry_token", outcome),
    });
  }
  if (config.registryNotificationsSecret !== "") {
    await app.register(registryNotificationRoutes, {
      baseUrl: config.baseUrl,
      secret: config.registryNotificationsSecret,
      names: createRegistryNames(store),
      store,
      now,
      log: (fields, msg) => app.log.warn(fields, msg),
    });
  }
  return {};
}
