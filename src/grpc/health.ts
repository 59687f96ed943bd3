import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";

/** What the health service reports on. */
export interface HealthOptions {
  /** Resolve true when the server can do its work (the database answers); a throw counts as false. */
  check: () => Promise<boolean>;
  /** Service names Check and Watch know, besides "" (the whole server). */
  services: readonly string[];
  /** How often each Watch call runs check(), in milliseconds; default 5000. */
  watchIntervalMs?: number;
}

/**
 * Create `grpc.health.v1.Health`: every known service is SERVING while check() passes and
 * NOT_SERVING otherwise. Check of an unknown service fails NOT_FOUND; Watch of one reports
 * SERVICE_UNKNOWN and stays open, as the health protocol asks.
 */
export function createHealthService(opts: HealthOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...opts.services]);
  const intervalMs = opts.watchIntervalMs ?? 5000;
  const serving = async () => {
    const ok = await opts.check().catch(() => false);
    return ok ? Status.SERVING : Status.NOT_SERVING;
  };
  return {
    async check(req) {
      if (!known.has(req.service)) {
        throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
      }
      return create(HealthCheckResponseSchema, { status: await serving() });
    },
    async *watch(req, ctx) {
      let last: Status | undefined;
      while (!ctx.signal.aborted) {
        const status = known.has(req.service) ? await serving() : Status.SERVICE_UNKNOWN;
        if (status !== last) {
          last = status;
          yield create(HealthCheckResponseSchema, { status });
        }
        // Rejects when the call ends; the stream then just ends.
        await sleep(intervalMs, undefined, { signal: ctx.signal }).catch(() => undefined);
      }
    },
  };
}
