import { capabilitiesKey, groupsWithKey } from "../access-answers.js";
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
 * changes, so they are always current.
 */
export function createAccessOps(
  cache: ReadCache,
  queries: Pick<SyncMethods<SharedOps>, keyof AccessOps>,
): AccessOps {
  return {
    identityExists: cache.memo("identityExists", queries.identityExists, (uid) => uid),
    tokenCutoff: cache.memo("tokenCutoff", queries.tokenCutoff, (uid) => uid),
    capabilitiesAt: cache.memo("capabilitiesAt", queries.capabilitiesAt, capabilitiesKey),
    groupsWithCapability: cache.memo(
      "groupsWithCapability",
      queries.groupsWithCapability,
      groupsWithKey,
    ),
  };
}
