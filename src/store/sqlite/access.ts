import { capabilitiesKey, groupsWithKey, resolveAt } from "../access-answers.js";
import type { SharedOps } from "../ops/all.js";
import type { SyncMethods } from "../ops/operation.js";
import type { ReadCache } from "./read-cache.js";
import type { SyncOps } from "./sync-ops.js";

/** The access queries of the SQLite store, which every authenticated call uses. */
export type AccessOps = SyncOps<
  "identityExists" | "tokenCutoff" | "capabilitiesAt" | "groupsWithCapability"
>;

/**
 * The access queries (the shared operations of ops/access.ts and ops/identities.ts, bound to
 * this database), answered through `cache`, which drops its answers whenever the database
 * changes, so they are always current. A cached answer keeps the expiry of each grant through
 * an expiring binding, and is resolved at `now()` on every lookup.
 */
export function createAccessOps(
  cache: ReadCache,
  queries: Pick<
    SyncMethods<SharedOps>,
    "identityExists" | "tokenCutoff" | "timedCapabilitiesAt" | "timedGroupsWithCapability"
  >,
  now: () => number,
): AccessOps {
  const capabilities = cache.memo("capabilitiesAt", queries.timedCapabilitiesAt, capabilitiesKey);
  const groups = cache.memo(
    "groupsWithCapability",
    queries.timedGroupsWithCapability,
    groupsWithKey,
  );
  return {
    identityExists: cache.memo("identityExists", queries.identityExists, (uid) => uid),
    tokenCutoff: cache.memo("tokenCutoff", queries.tokenCutoff, (uid) => uid),
    capabilitiesAt: (identityUid, groupUids) =>
      resolveAt(capabilities(identityUid, groupUids), now()),
    groupsWithCapability: (identityUid, capability) =>
      resolveAt(groups(identityUid, capability), now()),
  };
}
