import type { SignInPurge } from "../sign-in-upkeep-store.js";
import type { PgDb, PgOps } from "./pg-db.js";

/** The sign-in upkeep operations of the PostgreSQL store. */
export type PgSignInUpkeepOps = PgOps<"spendLogin" | "noteUnfinishedSignIn" | "purgeSignIns">;

/**
 * Create the sign-in upkeep operations on a migrated database. None changes an access answer
 * (the people a purge finds are deleted through deleteIdentity), so none tells the replicas'
 * access caches.
 */
export function createPgSignInUpkeepOps(db: PgDb): PgSignInUpkeepOps {
  const quiet = { notify: false };
  return {
    // One statement: of two replicas spending one login at once, the primary key lets one in.
    spendLogin: async (stateHash, expireTime) =>
      (await db.sql.run(
        `INSERT INTO oauth_spent_logins (state_hash, expire_time) VALUES ($1, $2)
         ON CONFLICT DO NOTHING`,
        [stateHash, expireTime],
      )) === 1,

    noteUnfinishedSignIn: async (identityUid, created, now) => {
      await db.sql.run(
        created
          ? `INSERT INTO oauth_unfinished_people (identity_uid, note_time) VALUES ($1, $2)
             ON CONFLICT (identity_uid) DO UPDATE SET note_time = EXCLUDED.note_time`
          : "UPDATE oauth_unfinished_people SET note_time = $2 WHERE identity_uid = $1",
        [identityUid, now],
      );
    },

    purgeSignIns: (now, unfinishedBefore) =>
      db.write(async (sql): Promise<SignInPurge> => {
        // Sessions first: their codes and refresh tokens go with them (ON DELETE CASCADE), and
        // a session is ended once nothing live is left in it.
        const sessions = await sql.run(
          `DELETE FROM oauth_sessions AS s WHERE s.revoke_time IS NOT NULL OR (
             NOT EXISTS (SELECT 1 FROM oauth_codes AS c
               WHERE c.session_id = s.id AND c.expire_time > $1)
             AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens AS t
               WHERE t.session_id = s.id AND t.expire_time > $1))`,
          [now],
        );
        const spentLogins = await sql.run(
          "DELETE FROM oauth_spent_logins WHERE expire_time <= $1",
          [now],
        );
        const codes = await sql.run("DELETE FROM oauth_codes WHERE expire_time <= $1", [now]);
        const refreshTokens = await sql.run(
          "DELETE FROM oauth_refresh_tokens WHERE expire_time <= $1",
          [now],
        );
        const people = await sql.rows<{ identity_uid: string }>(
          `SELECT u.identity_uid FROM oauth_unfinished_people AS u
             JOIN identities AS i ON i.uid = u.identity_uid
           WHERE u.note_time <= $1 AND i.last_seen_time <= u.note_time
             AND NOT EXISTS (SELECT 1 FROM oauth_sessions AS s WHERE s.identity_uid = u.identity_uid)
           ORDER BY u.note_time LIMIT 1000`,
          [unfinishedBefore],
        );
        return {
          spentLogins,
          codes,
          refreshTokens,
          sessions,
          unfinishedPeople: people.map((r) => r.identity_uid),
        };
      }, quiet),
  };
}
