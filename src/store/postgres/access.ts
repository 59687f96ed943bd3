import {
  accessCacheBudget,
  type CacheCounts,
  capabilitiesKey,
  createAnswerMap,
  groupsWithKey,
  resolveAt,
} from "../access-answers.js";
import type { SharedOps } from "../ops/all.js";
import type { AsyncMethods } from "../ops/operation.js";
import type { ChangeFeed, PgDb, PgOps } from "./pg-db.js";

/** The access queries of the PostgreSQL store, which every authenticated call uses. */
export type PgAccessOps = PgOps<
  "identityExists" | "tokenCutoff" | "capabilitiesAt" | "groupsWithCapability"
>;

/**
 * The access queries (the shared operations of ops/access.ts and ops/identities.ts, bound to
 * `db`), their answers cached while the change feed says nothing that could alter them has
 * committed, on this replica or any other.
 *
 * Why a cached answer is never staler than the bound in docs/postgres.md:
 * - our own commits move the feed's epoch before the writing call returns;
 * - another replica's commit moves it when its NOTIFY arrives (delivered at commit);
 * - while the listening connection is down or its heartbeat is late, the feed has no epoch
 *   and every question goes to the database; when it listens again, everything is forgotten;
 * - an answer is kept only if the epoch did not move while its query ran, so a query that
 *   read the database before a commit cannot store its answer after that commit's notice.
 */
export function createPgAccessOps(
  db: PgDb,
  queries: Pick<
    AsyncMethods<SharedOps>,
    "identityExists" | "tokenCutoff" | "timedCapabilitiesAt" | "timedGroupsWithCapability"
  >,
  counts: CacheCounts = { hits: 0, misses: 0 },
  budget = accessCacheBudget,
  now: () => number = Date.now,
): PgAccessOps {
  const cache = createEpochCache(db.changes, budget, counts);
  // A cached answer keeps the expiry of each grant through an expiring binding: resolved at
  // now() on every lookup, an expired grant counts for nothing on every replica at once,
  // whether or not any replica's sweep has deleted the binding (no notice is needed).
  const capabilities = cache.memo("capabilitiesAt", queries.timedCapabilitiesAt, capabilitiesKey);
  const groups = cache.memo(
    "groupsWithCapability",
    queries.timedGroupsWithCapability,
    groupsWithKey,
  );
  return {
    identityExists: cache.memo("identityExists", queries.identityExists, (uid) => uid),
    tokenCutoff: cache.memo("tokenCutoff", queries.tokenCutoff, (uid) => uid),
    capabilitiesAt: async (identityUid, groupUids) =>
      resolveAt(await capabilities(identityUid, groupUids), now()),
    groupsWithCapability: async (identityUid, capability) =>
      resolveAt(await groups(identityUid, capability), now()),
  };
}

/** A cache of query answers valid while the change feed's epoch stays the same. */
function createEpochCache(
  feed: ChangeFeed,
  budget: { maxBytes: number; maxEntries: number },
  counts: CacheCounts,
) {
  const entries = createAnswerMap(budget.maxBytes, budget.maxEntries);
  let cachedEpoch: number | undefined;
  return {
    memo<A extends unknown[], R>(
      name: string,
      query: (...args: A) => Promise<R>,
      key: (...args: A) => string,
    ): (...args: A) => Promise<R> {
      const space = `${name}\u0000`;
      return async (...args) => {
        const epoch = feed.epoch();
        if (epoch === undefined) {
          counts.misses++;
          return query(...args);
        }
        if (epoch !== cachedEpoch) {
          entries.clear();
          cachedEpoch = epoch;
        }
        const k = space + key(...args);
        if (entries.has(k)) {
          counts.hits++;
          return entries.get(k) as R;
        }
        counts.misses++;
        const answer = await query(...args);
        if (feed.epoch() === epoch && cachedEpoch === epoch) {
          entries.set(k, answer);
        }
        return answer;
      };
    },
  };
}
