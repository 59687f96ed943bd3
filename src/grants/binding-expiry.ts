import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Violations } from "../validation/field-rules.js";

/** The furthest ahead a binding may expire: a year and a day (366 days). */
export const maxBindingLifetimeMs = 366 * 24 * 60 * 60_000;

/**
 * The expiry of a binding from its `expire_time` (ms since the epoch), or undefined when
 * absent (until revoked). An expiry at or before `now`, or more than maxBindingLifetimeMs
 * ahead, is a violation of `field`: a grant that would be void at once, or a typo for ever.
 */
export function checkExpireTime(
  v: Violations,
  field: string,
  expireTime: Timestamp | undefined,
  now: number,
): number | undefined {
  if (expireTime === undefined) return undefined;
  const ms = timestampMs(expireTime);
  if (!Number.isFinite(ms) || ms <= now) {
    v.add(field, "must lie in the future (omit it for a binding that lasts until revoked)");
    return undefined;
  }
  if (ms - now > maxBindingLifetimeMs) {
    v.add(field, "may lie at most 366 days ahead");
    return undefined;
  }
  return ms;
}
