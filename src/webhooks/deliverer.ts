import { randomUUID } from "node:crypto";
import type { ClaimedDelivery, SubscriptionStore } from "../store/subscription-store.js";
import type { WebhookSender } from "./sender.js";
import { sign, signatureHeader } from "./signature.js";

/** How one attempt ended, for the metrics. */
export type AttemptOutcome = "delivered" | "failed" | "abandoned";

/** The delivery settings (README "Webhooks"). */
export interface DeliverySettings {
  /** Attempts per event, the first included; then the delivery is abandoned. */
  maxAttempts: number;
  /** The wait after the first failure; each next one doubles, up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Attempts in flight at once, per server. */
  concurrency: number;
  /** Attempts in flight at once for one organization, across servers. */
  perOrganization: number;
  /** Attempts in flight at once for one subscription, across servers. */
  perSubscription: number;
  /** How often the outbox is read when idle. */
  pollMs: number;
  /** The longest one attempt may take. */
  timeoutMs: number;
  /**
   * Past an attempt's own timeout, how long its lease still keeps other claims off: the time
   * to record the outcome. A server that dies mid-attempt delays that delivery by this much.
   */
  leaseMarginMs: number;
}

/** Options of startDeliverer. */
export interface DelivererOptions extends DeliverySettings {
  store: Pick<SubscriptionStore, "findDueDelivery" | "claimDeliveries" | "finishDelivery">;
  send: WebhookSender;
  now: () => number;
  /** Each attempt's outcome (an abandoned one also counts as failed first). */
  onAttempt?: (outcome: AttemptOutcome) => void;
  log: (fields: Record<string, unknown>, msg: string) => void;
  /** For the jitter; default Math.random. */
  random?: () => number;
}

/** A running deliverer. */
export interface Deliverer {
  /** Stop claiming; wait for the attempts in flight (bounded by their timeout). */
  stop(): Promise<void>;
}

/**
 * Failed attempts in a row (across deliveries) after which a subscription's circuit breaker
 * opens: its deliveries pause, then one attempt at a time probes the sink until one succeeds.
 */
export const breakerFailures = 5;

/** The wait before attempt `made + 1`: exponential, capped, with equal jitter (50-100%). */
export function retryDelayMs(
  made: number,
  s: Pick<DeliverySettings, "retryBaseMs" | "retryMaxMs">,
  random: () => number,
): number {
  const full = Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** Math.max(0, made - 1));
  return Math.round(full * (0.5 + random() / 2));
}

/** The CloudEvents structured-mode JSON body of a claimed delivery's event. */
export function cloudEventBody(event: NonNullable<ClaimedDelivery["event"]>): string {
  return JSON.stringify({
    specversion: "1.0",
    id: event.id,
    type: event.type,
    source: event.source,
    subject: event.subject,
    time: new Date(event.time).toISOString(),
    datacontenttype: "application/json",
    data: JSON.parse(event.data) as unknown,
  });
}

/**
 * Start delivering the outbox: claim due deliveries (at most `concurrency` in flight here,
 * `perOrganization` and `perSubscription` across servers, taken in turns: the store's
 * claimDeliveries), POST each signed event to its sink, record the outcome, retry failures
 * with backoff until the attempts are spent, and pause a subscription whose sink failed
 * breakerFailures times in a row. Off every request path: a slow or dead sink holds at most
 * its subscription's share of the slots, and none while paused.
 */
export function startDeliverer(opts: DelivererOptions): Deliverer {
  const random = opts.random ?? Math.random;
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let polling = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const attempt = async (d: ClaimedDelivery, lease: string) => {
    // Counted by the claim: a claim whose server died before the outcome counts too.
    const made = d.attempt;
    let status = 0;
    let error = "";
    if (!d.event) {
      error = "the event was pruned before it could be delivered";
    } else {
      const body = cloudEventBody(d.event);
      try {
        ({ status } = await opts.send({
          sink: d.sink,
          body,
          headers: {
            "content-type": "application/cloudevents+json; charset=utf-8",
            "user-agent": "Gatehouse-Webhooks/1",
            [signatureHeader]: sign(d.secret, body, Math.floor(opts.now() / 1000)),
            "Gatehouse-Delivery": d.id,
            "Gatehouse-Attempt": String(made),
          },
        }));
        if (status < 200 || status > 299) error = `the sink answered HTTP ${status}`;
      } catch (err) {
        error = String((err as Error).message ?? err).slice(0, 512);
      }
    }
    const delivered = error === "";
    const giveUp = !delivered && (made >= opts.maxAttempts || !d.event);
    const now = opts.now();
    // The sink's failures in a row, this one included: from breakerFailures on, every failure
    // pauses the subscription, each pause longer (the retries' backoff), so a dead or hanging
    // sink costs one attempt a pause and no slot in between.
    const inARow = d.consecutiveFailures + 1;
    const pauseMs =
      delivered || !d.event || inARow < breakerFailures
        ? undefined
        : retryDelayMs(inARow - breakerFailures + 1, opts, random);
    const why = giveUp ? `gave up after ${made} attempts: ${error}` : error;
    await opts.store.finishDelivery({
      id: d.id,
      lease,
      subscriptionUid: d.subscriptionUid,
      delivered,
      status,
      error:
        pauseMs === undefined
          ? why
          : `${why} (${inARow} failures in a row: deliveries paused for ${Math.ceil(pauseMs / 1000)} s)`,
      now,
      ...(delivered || giveUp ? {} : { retryAt: now + retryDelayMs(made, opts, random) }),
      ...(pauseMs === undefined ? {} : { pauseUntil: now + pauseMs }),
    });
    opts.onAttempt?.(delivered ? "delivered" : "failed");
    if (giveUp) {
      opts.onAttempt?.("abandoned");
      // The subscription's uid, never its sink (a URL may carry a token) or secret.
      opts.log(
        { subscription: d.subscriptionUid, delivery: d.id, attempts: made, status },
        "webhook delivery abandoned",
      );
    }
  };

  const poll = async () => {
    const room = opts.concurrency - inFlight.size;
    if (room <= 0) return;
    const now = opts.now();
    const due = {
      now,
      perOrganization: opts.perOrganization,
      perSubscription: opts.perSubscription,
      probeAfter: breakerFailures,
    };
    // A read first: an idle outbox, or one whose due deliveries all wait for their
    // organization's or subscription's turn, costs no write transaction.
    if ((await opts.store.findDueDelivery(due)) === undefined) return;
    const lease = randomUUID();
    const claimed = await opts.store.claimDeliveries({
      ...due,
      limit: room,
      lease,
      leaseUntil: now + opts.timeoutMs + opts.leaseMarginMs,
    });
    for (const d of claimed) {
      const p: Promise<void> = attempt(d, lease)
        .catch((err: unknown) => opts.log({ err, delivery: d.id }, "webhook delivery failed"))
        .finally(() => {
          inFlight.delete(p);
          // A free slot: look for more work at once.
          wake(0);
        });
      inFlight.add(p);
    }
    // A full batch: more may be due.
    if (claimed.length === room) again = true;
  };

  const run = () => {
    timer = undefined;
    polling = true;
    // The deliverer's store writes belong to no API call: made through the store itself, never
    // a call's view (Store.recording), they record no event.
    current = poll()
      .catch((err: unknown) => opts.log({ err }, "webhook outbox poll failed"))
      .finally(() => {
        polling = false;
        const next = again ? 0 : opts.pollMs;
        again = false;
        wake(next);
      });
  };

  function wake(delayMs: number) {
    if (stopped) return;
    if (polling) {
      if (delayMs === 0) again = true;
      return;
    }
    if (timer && delayMs !== 0) return;
    clearTimeout(timer);
    timer = setTimeout(run, delayMs);
    timer.unref();
  }

  wake(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      // A poll under way may still start attempts: wait for it, then for them.
      await current;
      await Promise.allSettled([...inFlight]);
    },
  };
}
