import type { Registry } from "prom-client";
import type { AttemptOutcome } from "../webhooks/deliverer.js";
import { counterFamily } from "./families.js";

/**
 * Register the webhook outbox's metrics on `registry`: attempts by outcome (delivered,
 * failed, abandoned: three fixed label values) and the outbox depth, read from the store at
 * scrape time (every replica reports the shared outbox). Returns the attempt recorder.
 */
export function registerWebhookMetrics(
  registry: Registry,
  depth: () => Promise<number>,
): (outcome: AttemptOutcome) => void {
  const attempts = counterFamily(
    registry,
    "gatehouse_webhook_delivery_attempts_total",
    "Webhook delivery attempts by outcome: delivered (2xx), failed (retried or not), abandoned (attempts spent).",
    ["outcome"],
  );
  const cells = {
    delivered: attempts.cell(["delivered"]),
    failed: attempts.cell(["failed"]),
    abandoned: attempts.cell(["abandoned"]),
  };
  const name = "gatehouse_webhook_outbox_depth";
  registry.registerMetric({
    name,
    get: async () => ({
      name,
      help: "Webhook deliveries waiting in the outbox (first attempts and retries).",
      type: "gauge",
      values: [{ labels: {}, value: await depth() }],
    }),
  } as never);
  return (outcome) => {
    cells[outcome].value++;
  };
}
