import {
  type CacheCounts,
  capabilitiesKey,
  createInterner,
  groupsWithKey,
} from "../access-answers.js";
import type { ChangeFeed, PgDb, PgOps } from "./pg-db.js";

/** The access queries of the PostgreSQL store, which every authenticated call uses. */
export type PgAccessOps = PgOps<"identityExists" | "capabilitiesAt" | "groupsWithCapability">;

/**
 * Create the access queries on `db` (identityExists: the shared operation, bound to it), their
 * answers cached while the change feed says nothing that could alter them has committed, on
 * this replica or any other.
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
  identityExists: (uid: string) => Promise<boolean>,
  counts: CacheCounts = { hits: 0, misses: 0 },
  maxEntries = 10_000,
): PgAccessOps {
  const cache = createEpochCache(db.changes, maxEntries, counts);

  const intern = createInterner();

  return {
    // The shared operation (ops/identities.ts), memoized.
    identityExists: cache.memo("identityExists", identityExists, (uid) => uid),
    // Both start from the caller's bindings (the role_bindings_identity index) and read each
    // bound role's capabilities by primary key.
    capabilitiesAt: cache.memo(
      "capabilitiesAt",
      async (identityUid: string, groupUids: readonly string[]): Promise<ReadonlySet<string>> => {
        const rows = await db.sql.rows<{ capability: string }>(
          `SELECT DISTINCT c.capability
           FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
           WHERE b.identity_uid = $1 AND b.group_uid = ANY($2::text[])`,
          [identityUid, groupUids],
        );
        return new Set(rows.map((r) => intern(r.capability)));
      },
      capabilitiesKey,
    ),
    groupsWithCapability: cache.memo(
      "groupsWithCapability",
      async (identityUid: string, capability: string): Promise<readonly string[]> => {
        const rows = await db.sql.rows<{ group_uid: string }>(
          `SELECT DISTINCT b.group_uid
           FROM role_bindings AS b JOIN role_capabilities AS c ON c.role_uid = b.role_uid
           WHERE b.identity_uid = $1 AND c.capability = $2
           ORDER BY b.group_uid`,
          [identityUid, capability],
        );
        return Object.freeze(rows.map((r) => r.group_uid));
      },
      groupsWithKey,
    ),
  };
}

/** A cache of query answers valid while the change feed's epoch stays the same. */
function createEpochCache(feed: ChangeFeed, maxEntries: number, counts: CacheCounts) {
  const entries = new Map<string, unknown>();
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
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
          entries.set(k, answer);
        }
        return answer;
      };
    },
  };
}
