import type { FastifyBaseLogger } from "fastify";
import { createExpirySweep, expirySweepIntervalMs } from "../grants/expiry-sweep.js";
import { startPeriodic } from "../periodic-job.js";
import type { Store } from "../store/store.js";
import type { Plane } from "./planes.js";

/** What the expiry plane is built from. */
export interface ExpiryDeps {
  store: Store;
  now: () => number;
  log: FastifyBaseLogger;
}

/**
 * Open the expiry of role bindings: from listen on, expired bindings are swept away every
 * expirySweepIntervalMs, each with its `expired` event (grants/expiry-sweep.ts).
 */
export function openExpiryPlane(deps: ExpiryDeps): Plane {
  const sweep = createExpirySweep({
    store: deps.store,
    now: deps.now,
    log: (fields, msg) => deps.log.info(fields, msg),
  });
  let stop: (() => void) | undefined;
  return {
    listen() {
      stop = startPeriodic(sweep, expirySweepIntervalMs, (err) =>
        deps.log.error({ err }, "role binding expiry failed"),
      );
    },
    close() {
      stop?.();
    },
  };
}
