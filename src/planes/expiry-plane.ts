import type { FastifyBaseLogger } from "fastify";
import { createExpirySweep, expirySweepIntervalMs } from "../grants/expiry-sweep.js";
import { createRequestExpirySweep } from "../grants/request-expiry-sweep.js";
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
 * expirySweepIntervalMs, each with its `expired` event (grants/expiry-sweep.ts), and so are
 * access requests nobody answered (grants/request-expiry-sweep.ts).
 */
export function openExpiryPlane(deps: ExpiryDeps): Plane {
  const sweep = createExpirySweep({
    store: deps.store,
    now: deps.now,
    log: (fields, msg) => deps.log.info(fields, msg),
  });
  // Access requests nobody answered lapse on the same beat, each with its `expired` event.
  const requests = createRequestExpirySweep({ store: deps.store, now: deps.now });
  const both = { run: async () => (await sweep.run()) + (await requests.run()) };
  let stop: (() => void) | undefined;
  return {
    listen() {
      stop = startPeriodic(both, expirySweepIntervalMs, (err) =>
        deps.log.error({ err }, "role binding expiry failed"),
      );
    },
    close() {
      stop?.();
    },
  };
}
