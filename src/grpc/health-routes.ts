import type { FastifyInstance, RawServerBase } from "fastify";

/** What the HTTP probes ask. */
export interface HealthRoutesOptions {
  /** Resolve true when the server can do its work (the database answers); a throw counts as false. */
  check: () => Promise<boolean>;
}

/**
 * Fastify plugin adding the HTTP probes: `GET /healthz` answers 200 `{"status":"SERVING"}`
 * while the process is up (liveness); `GET /readyz` answers the same when check() passes
 * and 503 `{"status":"NOT_SERVING"}` when not (readiness). Register with
 * `app.register(healthRoutes, { check })`.
 */
export async function healthRoutes<S extends RawServerBase>(
  app: FastifyInstance<S>,
  opts: HealthRoutesOptions,
): Promise<void> {
  app.get("/healthz", async (_req, reply) => {
    reply.header("cache-control", "no-store");
    return { status: "SERVING" };
  });
  app.get("/readyz", async (_req, reply) => {
    const ok = await opts.check().catch(() => false);
    reply.header("cache-control", "no-store").code(ok ? 200 : 503);
    return { status: ok ? "SERVING" : "NOT_SERVING" };
  });
}
