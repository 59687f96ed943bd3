import {
  accessCacheBudget,
  type CacheCounts,
  capabilitiesKey,
  createAnswerMap,
  groupsWithKey,
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
  queries: Pick<AsyncMethods<SharedOps>, keyof PgAccessOps>,
  counts: CacheCounts = { hits: 0, misses: 0 },
  budget = accessCacheBudget,
): PgAccessOps {
  const cache = createEpochCache(db.changes, budget, counts);
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
