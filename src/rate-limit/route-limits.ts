import type { FastifyInstance } from "fastify";
import { addressKey } from "./client-address.js";
import { rateLimitError } from "./rate-limit-error.js";
import { createTokenBuckets, type RatePolicy } from "./token-buckets.js";

/** A class of HTTP endpoints with a bucket per client address. */
export interface RouteLimit {
  /** Paths that start with this (`/oauth/`) or are it (`/registry/token`). */
  readonly prefix: string;
  /** The policy; undefined: the class is not limited. */
  readonly policy: RatePolicy | undefined;
}

/**
 * Add a hook that limits endpoints outside the RPC layer (sign-in under `/oauth/`, the
 * registry token endpoint), per client address, before anything else is done for them: over
 * the limit is HTTP 429 with `Retry-After`, `RateLimit-Policy` and `RateLimit` (the API's
 * headers) and an OAuth-style body, `{"error": "temporarily_unavailable", ...}`, as these
 * endpoints answer their other refusals.
 */
export function addRouteLimits(
  app: FastifyInstance,
  limits: readonly RouteLimit[],
  now: () => number,
): void {
  const on = limits.filter((l): l is RouteLimit & { policy: RatePolicy } => !!l.policy);
  if (on.length === 0) return;
  const classes = on.map((l) => ({ ...l, buckets: createTokenBuckets(now) }));
  app.addHook("onRequest", async (req, reply) => {
    const url = req.url;
    const c = classes.find((l) => url.startsWith(l.prefix));
    if (!c) return;
    const address = addressKey(req.ip);
    const wait = c.buckets.take(address, c.policy);
    if (wait === 0) return;
    const err = rateLimitError(c.policy, wait, `address:${address}`);
    err.metadata.forEach((value, name) => {
      reply.header(name, value);
    });
    return reply
      .code(429)
      .header("cache-control", "no-store")
      .header("content-type", "application/json")
      .send(
        JSON.stringify({
          error: "temporarily_unavailable",
          error_description: err.rawMessage,
        }),
      );
  });
}
