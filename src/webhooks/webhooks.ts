import type { Registry } from "prom-client";
import type { WebhookSettings } from "../config.js";
import { registerWebhookMetrics } from "../metrics/webhook-metrics.js";
import type { SubscriptionStore } from "../store/subscription-store.js";
import { type Deliverer, startDeliverer } from "./deliverer.js";
import { createWebhookSender } from "./sender.js";

/** Options of createWebhookDelivery. */
export interface WebhookDeliveryDeps {
  config: WebhookSettings;
  store: Pick<
    SubscriptionStore,
    "findDueDelivery" | "claimDeliveries" | "finishDelivery" | "getOutboxDepth"
  >;
  now: () => number;
  /** Where the metrics go, when they are on. */
  registry: Registry | undefined;
  log: (fields: Record<string, unknown>, msg: string) => void;
}

/** The server's webhook deliverer, started with the listener and stopped before the store. */
export interface WebhookDelivery {
  start(): void;
  stop(): Promise<void>;
}

/** Build the deliverer of the outbox from the server's settings (not started). */
export function createWebhookDelivery(deps: WebhookDeliveryDeps): WebhookDelivery {
  const { config } = deps;
  const onAttempt = deps.registry
    ? registerWebhookMetrics(deps.registry, () => deps.store.getOutboxDepth())
    : undefined;
  const send = createWebhookSender({
    rules: {
      allowLoopback: config.webhookAllowHttpLoopback,
      allowPrivateAddresses: config.webhookAllowPrivateAddresses,
    },
    timeoutMs: config.webhookTimeoutMs,
  });
  let running: Deliverer | undefined;
  return {
    start() {
      running ??= startDeliverer({
        store: deps.store,
        send,
        now: deps.now,
        maxAttempts: config.webhookMaxAttempts,
        retryBaseMs: config.webhookRetryBaseMs,
        retryMaxMs: config.webhookRetryMaxMs,
        concurrency: config.webhookConcurrency,
        perOrganization: config.webhookOrganizationConcurrency,
        perSubscription: config.webhookSubscriptionConcurrency,
        pollMs: config.webhookPollMs,
        timeoutMs: config.webhookTimeoutMs,
        leaseMarginMs: config.webhookLeaseMarginMs,
        log: deps.log,
        ...(onAttempt ? { onAttempt } : {}),
      });
    },
    async stop() {
      await running?.stop();
      running = undefined;
    },
  };
}
