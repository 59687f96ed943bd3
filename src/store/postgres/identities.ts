import { StoreError } from "../store.js";
import type { PgDb, PgOps } from "./pg-db.js";

/**
 * touchIdentity on PostgreSQL, the one identity operation with its own durability (the
 * others are in ops/identities.ts).
 */
export function createPgTouchIdentity(db: PgDb): PgOps<"touchIdentity"> {
  return {
    touchIdentity: async (uid, time) => {
      // One autocommit statement outside db.write: no access answer depends on lastSeenTime,
      // and every token exchange writes it, so it must not empty every replica's access cache.
      const changes = await db.sql.run("UPDATE identities SET last_seen_time = $1 WHERE uid = $2", [
        time,
        uid,
      ]);
      if (changes === 0) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    },
  };
}
