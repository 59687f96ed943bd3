/**
 * A rate and a burst: a bucket of `burst` tokens, refilled at `count` tokens every `periodMs`.
 * A call takes one token; a full bucket lets `burst` calls through at once.
 */
export interface RatePolicy {
  /** The policy's name in `RateLimit-Policy` and QuotaFailure (`api`, `sts`, `org:<uid>`). */
  readonly name: string;
  readonly count: number;
  readonly periodMs: number;
  readonly burst: number;
}

/** The buckets of one class of calls (the API, the STS exchange, ...), one per caller key. */
export interface TokenBuckets {
  /**
   * Take a token from `key`'s bucket under `policy`: 0 when taken, otherwise the milliseconds
   * until one will be there (nothing is taken). A key's first call finds its bucket full.
   */
  take(key: string, policy: RatePolicy): number;
  /** The number of buckets held now (full ones are forgotten as the clock moves on). */
  readonly size: number;
}

interface Bucket {
  tokens: number;
  at: number;
  policy: RatePolicy;
}

/** How often, by the clock, buckets that have refilled are forgotten. */
const sweepMs = 60_000;

/**
 * Create token buckets on the clock `now` (tests pass their own). A bucket is two numbers
 * refilled lazily when its key calls: no timer per key. A full bucket is the same as none, so
 * once a minute (on a call, by the clock) the full ones are dropped: the map holds only the
 * callers seen within about a refill time.
 */
export function createTokenBuckets(now: () => number): TokenBuckets {
  const buckets = new Map<string, Bucket>();
  let sweptAt = now();
  const level = (b: Bucket, t: number): number =>
    Math.min(b.policy.burst, b.tokens + ((t - b.at) * b.policy.count) / b.policy.periodMs);
  const sweep = (t: number) => {
    sweptAt = t;
    for (const [key, b] of buckets) if (level(b, t) >= b.policy.burst) buckets.delete(key);
  };
  return {
    take(key, policy) {
      const t = now();
      if (t - sweptAt >= sweepMs || t < sweptAt) sweep(t);
      const b = buckets.get(key);
      if (!b) {
        if (policy.burst < 1) return msFor(1, policy);
        buckets.set(key, { tokens: policy.burst - 1, at: t, policy });
        return 0;
      }
      // A clock that went back refills nothing (and takes nothing back).
      const tokens = t < b.at ? b.tokens : level(b, t);
      b.at = Math.max(t, b.at);
      // An operator's new override applies from the key's next call.
      b.policy = policy;
      if (tokens >= 1) {
        b.tokens = tokens - 1;
        return 0;
      }
      b.tokens = tokens;
      return msFor(1 - tokens, policy);
    },
    get size() {
      return buckets.size;
    },
  };
}

/** Milliseconds until `missing` tokens have refilled, at least 1. */
function msFor(missing: number, policy: RatePolicy): number {
  // Less a hair: 0.01 of a token at 10 a second is 1.0000000000000009 ms in floating point.
  return Math.max(1, Math.ceil((missing * policy.periodMs) / policy.count - 1e-9));
}
