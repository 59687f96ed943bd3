import type { Database } from "better-sqlite3";
import type { SignInPurge } from "../sign-in-upkeep-store.js";
import type { SyncOps } from "./sync-ops.js";

/** The sign-in upkeep operations of the SQLite store. */
export type SignInUpkeepOps = SyncOps<"spendLogin" | "noteUnfinishedSignIn" | "purgeSignIns">;

/** Create the sign-in upkeep operations on an open, migrated database. */
export function createSignInUpkeepOps(db: Database): SignInUpkeepOps {
  const spend = db.prepare(
    "INSERT INTO oauth_spent_logins (state_hash, expire_time) VALUES (?, ?) ON CONFLICT DO NOTHING",
  );
  const noteNew = db.prepare(
    `INSERT INTO oauth_unfinished_people (identity_uid, note_time) VALUES (?, ?)
     ON CONFLICT (identity_uid) DO UPDATE SET note_time = excluded.note_time`,
  );
  const noteAgain = db.prepare(
    "UPDATE oauth_unfinished_people SET note_time = ? WHERE identity_uid = ?",
  );
  const dropSpent = db.prepare("DELETE FROM oauth_spent_logins WHERE expire_time <= ?");
  // Sessions first: their codes and refresh tokens go with them (ON DELETE CASCADE), and a
  // session is ended once nothing live is left in it.
  const dropSessions = db.prepare(
    `DELETE FROM oauth_sessions AS s WHERE s.revoke_time IS NOT NULL OR (
       NOT EXISTS (SELECT 1 FROM oauth_codes AS c WHERE c.session_id = s.id AND c.expire_time > @now)
       AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens AS t
         WHERE t.session_id = s.id AND t.expire_time > @now))`,
  );
  const dropCodes = db.prepare("DELETE FROM oauth_codes WHERE expire_time <= ?");
  const dropRefresh = db.prepare("DELETE FROM oauth_refresh_tokens WHERE expire_time <= ?");
  const unfinished = db.prepare(
    `SELECT u.identity_uid FROM oauth_unfinished_people AS u
       JOIN identities AS i ON i.uid = u.identity_uid
     WHERE u.note_time <= ? AND i.last_seen_time <= u.note_time
       AND NOT EXISTS (SELECT 1 FROM oauth_sessions AS s WHERE s.identity_uid = u.identity_uid)
     ORDER BY u.note_time LIMIT 1000`,
  );

  return {
    spendLogin: (stateHash, expireTime) => spend.run(stateHash, expireTime).changes === 1,
    noteUnfinishedSignIn: (identityUid, created, now) => {
      if (created) noteNew.run(identityUid, now);
      else noteAgain.run(now, identityUid);
    },
    purgeSignIns: db.transaction((now: number, unfinishedBefore: number): SignInPurge => {
      const sessions = dropSessions.run({ now }).changes;
      return {
        spentLogins: dropSpent.run(now).changes,
        sessions,
        codes: dropCodes.run(now).changes,
        refreshTokens: dropRefresh.run(now).changes,
        unfinishedPeople: (unfinished.all(unfinishedBefore) as { identity_uid: string }[]).map(
          (r) => r.identity_uid,
        ),
      };
    }).immediate,
  };
}
