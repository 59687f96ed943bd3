import type { FastifyInstance } from "fastify";
import { healthRoutes } from "../grpc/health-routes.js";
import type { Store } from "../store/store.js";
import type { Plane } from "./planes.js";

/** HealthPlane answers whether the server can serve: /livez, /readyz, and the health service. */
export interface HealthPlane extends Plane {
  /** Whether the database answers within readyTimeoutMs; never rejects. */
  ready(): Promise<boolean>;
}

/** The longest /readyz and the health service wait for the database. */
const readyTimeoutMs = 1_000;

/**
 * Open health: ready when the database answers, within a second. A stalled database makes a
 * probe fail, not hang (README "Connections, stalls and shutdown").
 */
export async function openHealthPlane(deps: {
  store: Pick<Store, "ping">;
  app: FastifyInstance;
}): Promise<HealthPlane> {
  const ready = () =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), readyTimeoutMs);
      deps.store
        .ping({ timeoutMs: readyTimeoutMs })
        .then(
          () => resolve(true),
          () => resolve(false),
        )
        .finally(() => clearTimeout(timer));
    });
  await deps.app.register(healthRoutes, { check: ready });
  return { ready };
}
