import type { Database } from "better-sqlite3";
import { StoreError } from "../store.js";
import type { ReadCache } from "./read-cache.js";
import type { SyncOps } from "./sync-ops.js";

/**
 * touchIdentity on SQLite, the one identity operation with its own durability (the others
 * are in ops/identities.ts).
 */
export function createTouchIdentity(
  db: Database,
  cache: Pick<ReadCache, "unseen">,
): SyncOps<"touchIdentity"> {
  const touch = db.prepare("UPDATE identities SET last_seen_time = ? WHERE uid = ?");
  // lastSeenTime changes with every token exchange. Its commit does not wait for the disk
  // (synchronous = NORMAL, for that statement only): in WAL mode it survives a crash of the
  // process, and reaches the disk with the next durable commit or checkpoint; a power loss may
  // forget the latest of these times, never a grant or a revocation. An fsync per exchange
  // capped exchanges at the disk's fsync rate (~1k/s here).
  const durable = db.pragma("synchronous", { simple: true }) as number;
  const relaxed = db.prepare("PRAGMA synchronous = NORMAL");
  const restore = db.prepare(`PRAGMA synchronous = ${durable}`);
  return {
    touchIdentity: (uid, time) => {
      relaxed.run();
      let changes: number;
      try {
        // No access answer depends on lastSeenTime: every exchange writes it, and emptying the
        // access cache each time made every exchange slow down the reads beside it.
        changes = cache.unseen(() => touch.run(time, uid).changes);
      } finally {
        restore.run();
      }
      if (changes === 0) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    },
  };
}
