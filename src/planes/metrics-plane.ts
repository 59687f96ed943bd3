import type { FastifyBaseLogger } from "fastify";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";
import type { Config } from "../config.js";
import { createMetrics, type Metrics, noMetrics } from "../metrics/metrics.js";
import { createMetricsListener } from "../metrics/metrics-listener.js";
import { storeOperations, timedStore } from "../metrics/timed-store.js";
import { apiServices, protocolServices } from "../service-table.js";
import type { Store } from "../store/store.js";
import type { Plane } from "./planes.js";

/** What the metrics plane is built from. */
export interface MetricsDeps {
  config: Pick<Config, "metricsPort" | "metricsHost">;
  store: Store;
  log: FastifyBaseLogger;
}

/** MetricsPlane is what the server records for Prometheus, and the port that serves it. */
export interface MetricsPlane extends Plane {
  /** noMetrics when GATEHOUSE_METRICS_PORT is empty. */
  metrics: Metrics;
  /** The store every other plane uses: timed per operation when metrics are on. */
  store: Store;
  /** The metrics listener's port once listening, if it is on. */
  readonly port: number | undefined;
}

/**
 * Open the metrics: recorded only when they are served. Off, the hot paths call empty
 * functions and the store is not wrapped.
 */
export function openMetricsPlane({ config, store, log }: MetricsDeps): MetricsPlane {
  const metrics: Metrics =
    config.metricsPort === undefined
      ? noMetrics
      : createMetrics({
          services: [...apiServices, ...protocolServices.map((p) => p.service)],
          storeOperations: storeOperations(store),
          accessCache: () => store.accessCacheCounts(),
          tokenRpcs: {
            [`${SecurityTokenService.typeName}/${SecurityTokenService.method.exchange.name}`]:
              "sts_exchange",
          },
        });
  const listener = metrics.registry
    ? createMetricsListener(metrics.registry, (err) =>
        log.error({ err }, "metrics collection failed"),
      )
    : undefined;
  let port: number | undefined;
  return {
    metrics,
    store: metrics === noMetrics ? store : timedStore(store, metrics),
    get port() {
      return port;
    },
    async listen() {
      if (listener && config.metricsPort !== undefined) {
        port = await listener.listen(config.metricsHost, config.metricsPort);
      }
    },
    async stop() {
      await listener?.close();
    },
  };
}
