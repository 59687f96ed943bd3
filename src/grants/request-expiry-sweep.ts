import { changeScope } from "../events/audit-scope.js";
import type { Store } from "../store/store.js";

/** The event type of an access request that lapsed unanswered. */
export const requestExpiredType = "dev.gatehouse.iam.access_request.expired.v1";

/** How many lapsed requests one sweep marks at most (the rest wait for the next). */
const sweepBatchSize = 200;

/** The audit scope of one lapse (its subject: the request). */
const lapseScope = () =>
  changeScope({
    type: requestExpiredType,
    source: "access request expiry",
    protocol: "upkeep",
    operator: "access request expiry",
    outcomeTypes: { expired: requestExpiredType },
  });

/** What the sweep needs. */
export interface RequestExpirySweepDeps {
  store: Pick<Store, "lapsedAccessRequests" | "expireAccessRequest" | "recording">;
  now: () => number;
}

/**
 * Create the sweep of lapsed access requests: each pending request past its expiration time
 * is marked expired in its own transaction, with its `expired` event. A lapsed request is
 * shown expired and refused an answer from its expiration on, swept or not (the service
 * compares with the clock); the sweep records the event, once, whichever replica marks it.
 */
export function createRequestExpirySweep(deps: RequestExpirySweepDeps): {
  run(): Promise<number>;
} {
  return {
    async run() {
      const at = deps.now();
      let marked = 0;
      for (const uid of await deps.store.lapsedAccessRequests(at, sweepBatchSize)) {
        const done = await deps.store.recording(lapseScope()).expireAccessRequest(uid, at);
        if (done.kind === "expired") marked++;
      }
      return marked;
    },
  };
}
