import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import { addRouteLimits } from "../rate-limit/route-limits.js";
import { scimRoutes } from "../scim/scim-routes.js";
import type { Store } from "../store/store.js";
import { bodyLimit } from "./edge-plane.js";
import type { Plane } from "./planes.js";

/** What the SCIM plane is built from. */
export interface ScimDeps {
  config: Config;
  store: Store;
  now: () => number;
  app: FastifyInstance;
}

/**
 * Open SCIM 2.0 provisioning (docs/scim.md): `{base URL}/scim/v2/<org uid>/…` for every
 * organization with a SCIM connection, limited per client address (GATEHOUSE_SCIM_RATE_LIMIT)
 * before its token is checked, its token checked before its body is read, its body bounded
 * as the API's are.
 */
export async function openScimPlane(deps: ScimDeps): Promise<Plane> {
  const { config, store, now, app } = deps;
  const prefix = `${new URL(config.baseUrl).pathname.replace(/\/$/, "")}/scim/v2`;
  addRouteLimits(app, [{ prefix: `${prefix}/`, policy: config.rateLimits.scim }], now);
  await app.register(scimRoutes, {
    prefix,
    store,
    baseUrl: config.baseUrl,
    now,
    bodyLimit,
    log: {
      info: (fields, msg) => app.log.info(fields, msg),
      error: (fields, msg) => app.log.error(fields, msg),
    },
  });
  return {};
}
