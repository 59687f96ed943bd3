import type { Interceptor } from "@connectrpc/connect";
import type { FastifyBaseLogger } from "fastify";
import type { Registry } from "prom-client";
import type { Config } from "../config.js";
import { createAuditInterceptor, createUnrecordedChanges } from "../events/audit-interceptor.js";
import { createEventRetention, pruneIntervalMs } from "../events/event-retention.js";
import { startPeriodic } from "../periodic-job.js";
import type { Store } from "../store/store.js";
import { createWebhookDelivery } from "../webhooks/webhooks.js";
import type { Plane } from "./planes.js";

/** What the events plane is built from. */
export interface EventsDeps {
  config: Config;
  store: Store;
  now: () => number;
  /** Where the deliverer's metrics go, when metrics are on. */
  registry: Registry | undefined;
  log: FastifyBaseLogger;
  /** Record the audit trail (ServerDeps.auditTrail). */
  auditTrail: boolean;
}

/** EventsPlane is the audit trail: its recording, its retention and its webhook deliveries. */
export interface EventsPlane extends Plane {
  /**
   * For the RPC plane's interceptors: hands each mutating call its store view, which records
   * the call's event with its change (or, with the audit trail off, the store itself).
   */
  interceptors: Interceptor[];
}

/**
 * Open the events: the retention job starts now (events older than GATEHOUSE_EVENT_RETENTION
 * go, in batches); the webhook outbox's deliverer starts with the port, off every request path.
 */
export function openEventsPlane(deps: EventsDeps): EventsPlane {
  const { config, store, now, log } = deps;
  const retention = createEventRetention({
    store,
    now,
    retentionMs: config.eventRetentionSeconds * 1000,
    log: (fields, msg) => log.info(fields, msg),
  });
  const stopRetention = startPeriodic(retention, pruneIntervalMs, (err) =>
    log.error({ err }, "event retention failed"),
  );
  const webhooks = createWebhookDelivery({
    config,
    store,
    now,
    registry: deps.registry,
    log: (fields, msg) => log.warn(fields, msg),
  });
  return {
    interceptors: [
      deps.auditTrail ? createAuditInterceptor(store) : createUnrecordedChanges(store),
    ],
    listen: () => webhooks.start(),
    // Before the caller closes the store: attempts in flight record their outcome.
    stop: () => webhooks.stop(),
    close: () => stopRetention(),
  };
}
