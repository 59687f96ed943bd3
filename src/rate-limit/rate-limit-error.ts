import { Code, ConnectError } from "@connectrpc/connect";
import {
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import type { RatePolicy } from "./token-buckets.js";

/** ErrorInfo.reason of a call refused by a rate limit. */
export const rateLimitReason = "RATE_LIMIT_EXCEEDED";

/**
 * The error of a call over its rate limit: RESOURCE_EXHAUSTED with ErrorInfo
 * (`RATE_LIMIT_EXCEEDED`), RetryInfo (when a token will be there) and QuotaFailure (the policy
 * and whose bucket: `identity:<uid>` or `address:<client address>`, the caller's own). Its
 * metadata are the HTTP headers of a REST 429 (docs/api.md "Rate limits"): `Retry-After` in
 * whole seconds and the IETF `RateLimit-Policy` / `RateLimit` fields
 * (draft-ietf-httpapi-ratelimit-headers-09); gRPC and Connect carry them as response metadata.
 */
export function rateLimitError(policy: RatePolicy, retryMs: number, subject: string): ConnectError {
  const seconds = Math.max(1, Math.ceil(retryMs / 1000));
  const window = Math.ceil(policy.periodMs / 1000);
  const metadata = new Headers({
    "retry-after": String(seconds),
    "ratelimit-policy": `"${policy.name}";q=${policy.count};w=${window}`,
    ratelimit: `"${policy.name}";r=0;t=${seconds}`,
  });
  const description = `at most ${policy.count} calls per ${window} s (bursts of ${policy.burst})`;
  return new ConnectError(
    `Resource exhausted: rate limit exceeded (${description}); retry in ${seconds} s`,
    Code.ResourceExhausted,
    metadata,
    [
      // The domain is filled in by toApiError, which knows it.
      { desc: ErrorInfoSchema, value: { reason: rateLimitReason, domain: "" } },
      {
        desc: RetryInfoSchema,
        value: {
          retryDelay: {
            seconds: BigInt(Math.floor(retryMs / 1000)),
            nanos: (retryMs % 1000) * 1_000_000,
          },
        },
      },
      {
        desc: QuotaFailureSchema,
        value: {
          violations: [
            {
              subject,
              description,
              quotaId: policy.name,
              quotaValue: BigInt(policy.count),
            },
          ],
        },
      },
    ],
  );
}
