import type { ListPage, ListQuery } from "./store.js";

/** What the outbox knows of a subscription's deliveries. */
export interface DeliveryStateRecord {
  /** Delivery rows waiting (first attempt or a retry). */
  pendingCount: number;
  deliveredCount: number;
  failedAttempts: number;
  abandonedCount: number;
  /** Milliseconds since the epoch; 0 before the first attempt. */
  lastAttemptTime: number;
  /** 0 before the first success. */
  lastSuccessTime: number;
  /** The HTTP status of the last attempt; 0 when it got no answer. */
  lastStatus: number;
  /** "" when the last attempt succeeded (or none was made). */
  lastError: string;
  /** Attempts that failed in a row, across deliveries (the circuit breaker's count). */
  consecutiveFailures: number;
  /**
   * Until when no delivery is attempted (the circuit breaker is open), milliseconds since the
   * epoch; 0 or past: deliveries go on.
   */
  pausedUntil: number;
}

/** A stored webhook subscription, without its secret (the deliverer alone reads that). */
export interface SubscriptionRecord {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  sink: string;
  eventTypes: string[];
  delivery: DeliveryStateRecord;
  createTime: number;
  updateTime: number;
}

/** Input of createSubscription. */
export interface NewSubscription {
  /** A direct child uid of groupUid. */
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  sink: string;
  eventTypes: string[];
  /** The HMAC key; stored, never read back through the API. */
  secret: string;
  now: number;
}

/** A change to a subscription; absent fields keep their value. */
export interface SubscriptionPatch {
  name?: string;
  description?: string;
  sink?: string;
  eventTypes?: string[];
}

/** One delivery the deliverer claimed: where to send which event, with what key. */
export interface ClaimedDelivery {
  id: string;
  subscriptionUid: string;
  sink: string;
  secret: string;
  /**
   * This attempt's number, 1 for the first: counted when claimed, so an attempt whose server
   * died (its lease ran out) counts too.
   */
  attempt: number;
  /** The subscription's failed attempts in a row when this one was claimed. */
  consecutiveFailures: number;
  /** The event as the events table holds it; undefined when it was pruned meanwhile. */
  event?: {
    id: string;
    type: string;
    source: string;
    subject: string;
    time: number;
    data: string;
  };
}

/** How one attempt ended, as the deliverer reports it. */
export interface DeliveryOutcome {
  id: string;
  /** The claim's lease token: a delivery another claim took over since is left alone. */
  lease: string;
  subscriptionUid: string;
  /** The sink accepted the event (2xx): the delivery row goes. */
  delivered: boolean;
  /** HTTP status, 0 without an answer. */
  status: number;
  /** "" when delivered. Never holds the secret or the body. */
  error: string;
  now: number;
  /**
   * When a failed delivery is tried again; undefined: give up (the attempts are spent), the
   * row goes and the subscription counts it as abandoned.
   */
  retryAt?: number;
  /**
   * A failure that opens the subscription's circuit breaker: no delivery of it is attempted
   * before this time (its due deliveries and this one's retry are put off until then).
   */
  pauseUntil?: number;
}

/** What a claim of due deliveries asks of them (SubscriptionStore.findDueDelivery). */
export interface DueQuery {
  now: number;
  /** The most attempts in flight at once for one subscription, across servers. */
  perSubscription: number;
  /** The most attempts in flight at once for one organization, across servers. */
  perOrganization: number;
  /**
   * A subscription with this many failures in a row is half-open: one attempt at a time (a
   * probe) once its pause is over, until one succeeds.
   */
  probeAfter: number;
}

/** A claim of due deliveries (SubscriptionStore.claimDeliveries). */
export interface DeliveryClaim extends DueQuery {
  /** The most deliveries claimed. */
  limit: number;
  lease: string;
  leaseUntil: number;
}

/**
 * The storage of webhook subscriptions and of their outbox. The delivery rows are written with
 * the event they deliver, in its transaction (ops/events.ts appendEvent's fan-out), so a
 * committed event always has its deliveries; the deliverer claims them under a lease (several
 * replicas never send one attempt twice at once; a replica that dies mid-attempt loses its
 * lease and another sends it again: at least once).
 */
export interface SubscriptionStore {
  /**
   * Create a subscription. Throws `not_found` if the group does not exist, `already_exists`
   * if a subscription of the group has the name or the uid is taken.
   */
  createSubscription(s: NewSubscription): Promise<SubscriptionRecord>;
  /** How many subscriptions the organization `orgUid` has, in all its groups. */
  getSubscriptionCount(orgUid: string): Promise<number>;
  /** Get a subscription with its delivery state, or undefined. */
  getSubscription(uid: string): Promise<SubscriptionRecord | undefined>;
  /** Change a subscription; throws `not_found`, or `already_exists` for a taken name. */
  updateSubscription(
    uid: string,
    patch: SubscriptionPatch,
    now: number,
  ): Promise<SubscriptionRecord>;
  /** Delete a subscription and its pending deliveries; throws `not_found`. */
  deleteSubscription(uid: string): Promise<void>;
  /** List subscriptions (children of their group in the uid tree). */
  listSubscriptions(query: ListQuery): Promise<ListPage<SubscriptionRecord>>;
  /**
   * The id of a delivery a claim with these caps would take at `now` (due, not leased, of a
   * subscription not paused and under its caps), or undefined: the deliverer's one read
   * before a claim, so neither an idle outbox nor one where everything due waits for a busy
   * organization's turn costs a write transaction (or, on PostgreSQL, the claims' lock).
   */
  findDueDelivery(at: DueQuery): Promise<string | undefined>;
  /**
   * Claim up to `limit` deliveries due at `now`, not leased by anyone, of subscriptions not
   * paused: each leased to `lease` until `leaseUntil` and its attempt counted. Fair: no
   * subscription or organization gets more attempts in flight (leased, on any server) than
   * its cap, and the claim goes round the organizations and their subscriptions (the least
   * busy first, each one's oldest delivery first) rather than oldest first overall. Safe
   * between replicas (one claim at a time on PostgreSQL, under an advisory lock).
   */
  claimDeliveries(claim: DeliveryClaim): Promise<ClaimedDelivery[]>;
  /** Record an attempt's outcome, if the lease is still the deliverer's. */
  finishDelivery(outcome: DeliveryOutcome): Promise<void>;
  /** Delivery rows waiting in all (the outbox depth metric). */
  getOutboxDepth(): Promise<number>;
}
