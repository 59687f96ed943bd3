/**
 * A count per key (an identity provider's sign-ins, an address's callbacks) in fixed windows
 * of a minute, on this replica: `take(key)` is true while the key's count this minute is
 * under `perMinute`. Keys are forgotten with each window.
 */
export interface SignInLimit {
  take(provider: string): boolean;
  /** Milliseconds until the current window ends. */
  retryAfterMs(): number;
}

const windowMs = 60_000;

/** Create the limit of `perMinute` a minute per key, on the clock `now`. */
export function createSignInLimit(perMinute: number, now: () => number): SignInLimit {
  let windowStart = now();
  // One entry per provider signed in through this minute; emptied with every window.
  let counts = new Map<string, number>();
  const roll = () => {
    const t = now();
    if (t - windowStart >= windowMs || t < windowStart) {
      windowStart = t;
      counts = new Map();
    }
  };
  return {
    take(provider) {
      roll();
      const n = counts.get(provider) ?? 0;
      if (n >= perMinute) return false;
      counts.set(provider, n + 1);
      return true;
    },
    retryAfterMs() {
      roll();
      return windowStart + windowMs - now();
    },
  };
}
