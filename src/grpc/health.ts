import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
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
  /** Anonymous Watch calls open at once, in all (default 100): past it, RESOURCE_EXHAUSTED. */
  maxWatches?: number;
  /**
   * Watch calls open at once beyond maxWatches that only callers with a valid token may take
   * (default 100): unauthenticated streams cannot lock real watchers out.
   */
  reservedWatches?: number;
  /** Whether the call came with a valid token; without it, every call is anonymous. */
  isAuthenticated?: (ctx: HandlerContext) => boolean;
  /** Watch calls open at once on one connection (default 4). */
  maxWatchesPerConnection?: number;
  /**
   * A Watch call that has sent nothing for this long ends (default 50 s, inside the
   * connections' idle timeout): the client watches again. Unauthenticated streams must not
   * live for ever.
   */
  watchIdleMs?: number;
  /** The connection a call arrived on, for the per-connection bound; undefined: not bounded. */
  connectionOf?: (ctx: HandlerContext) => object | undefined;
}

/**
 * Create `grpc.health.v1.Health`: every known service is SERVING while check() passes and
 * NOT_SERVING otherwise. Check of an unknown service fails NOT_FOUND; Watch of one reports
 * SERVICE_UNKNOWN and stays open, as the health protocol asks. Health needs no token, so its
 * streams are bounded: in number (in all and per connection) and in idle time; callers with a
 * valid token have slots of their own, which anonymous streams cannot fill.
 */
export function createHealthService(opts: HealthOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...opts.services]);
  const intervalMs = opts.watchIntervalMs ?? 5000;
  const maxWatches = opts.maxWatches ?? 100;
  const reserved = opts.reservedWatches ?? 100;
  const maxPerConnection = opts.maxWatchesPerConnection ?? 4;
  const idleMs = opts.watchIdleMs ?? 50_000;
  let open = 0;
  let anonymous = 0;
  const perConnection = new WeakMap<object, number>();
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
      const connection = opts.connectionOf?.(ctx);
      const onConnection = connection ? (perConnection.get(connection) ?? 0) : 0;
      const authenticated = opts.isAuthenticated?.(ctx) === true;
      const full = authenticated ? open >= maxWatches + reserved : anonymous >= maxWatches;
      if (full || onConnection >= maxPerConnection) {
        throw new ConnectError(
          "too many health watches open; try again later",
          Code.ResourceExhausted,
        );
      }
      open++;
      if (!authenticated) anonymous++;
      if (connection) perConnection.set(connection, onConnection + 1);
      try {
        let last: Status | undefined;
        let lastSent = Date.now();
        while (!ctx.signal.aborted && Date.now() - lastSent < idleMs) {
          const status = known.has(req.service) ? await serving() : Status.SERVICE_UNKNOWN;
          if (status !== last) {
            last = status;
            lastSent = Date.now();
            yield create(HealthCheckResponseSchema, { status });
          }
          const wait = Math.min(intervalMs, Math.max(0, idleMs - (Date.now() - lastSent)));
          // Rejects when the call ends; the stream then just ends.
          await sleep(wait, undefined, { signal: ctx.signal }).catch(() => undefined);
        }
      } finally {
        open--;
        if (!authenticated) anonymous--;
        if (connection) {
          const n = (perConnection.get(connection) ?? 1) - 1;
          if (n === 0) perConnection.delete(connection);
          else perConnection.set(connection, n);
        }
      }
    },
  };
}
