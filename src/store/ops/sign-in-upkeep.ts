import type { SignInPurge } from "../sign-in-upkeep-store.js";
import { StoreError } from "../vocabulary.js";
import { exists, type OpsOf, rows, run, write } from "./operation.js";

// A person who holds nothing and has not been seen since `?`: a root identity made by a
// sign-in (no group, no method of its own), with no role binding anywhere (so no
// organization, no ownership), in no team, no session (so no refresh token and no access token
// of one), no identity provider it is the writer of, no invite it created, and no sign-in
// still unfinished (that purge has its own grace). Anything one holds keeps it.
const idlePerson = `i.group_uid IS NULL AND i.claim_match IS NULL AND i.static_keys IS NULL
  AND i.last_seen_time <= ?
  AND NOT EXISTS (SELECT 1 FROM role_bindings AS b WHERE b.identity_uid = i.uid)
  AND NOT EXISTS (SELECT 1 FROM team_members AS m WHERE m.identity_uid = i.uid)
  AND NOT EXISTS (SELECT 1 FROM oauth_sessions AS s WHERE s.identity_uid = i.uid)
  AND NOT EXISTS (SELECT 1 FROM identity_providers AS p WHERE p.writer_uid = i.uid)
  AND NOT EXISTS (SELECT 1 FROM group_invites AS v WHERE v.creator_uid = i.uid)
  AND NOT EXISTS (SELECT 1 FROM oauth_unfinished_people AS u WHERE u.identity_uid = i.uid)`;

/**
 * The sign-in upkeep operations of both backends. None changes an access answer (the people a
 * purge finds are deleted through deleteIdentity), so none empties the access caches; the two
 * single statements need no transaction on PostgreSQL (of two replicas spending one login at
 * once, the primary key lets one in).
 */
export const signInUpkeepOps = {
  spendLogin: write(
    function* (stateHash: string, expireTime: number) {
      return (
        (yield* run(
          `INSERT INTO oauth_spent_logins (state_hash, expire_time) VALUES (?, ?)
           ON CONFLICT DO NOTHING`,
          stateHash,
          expireTime,
        )) === 1
      );
    },
    { accessNeutral: true, autocommit: true },
  ),

  noteUnfinishedSignIn: write(
    function* (identityUid: string, created: boolean, now: number) {
      if (created) {
        yield* run(
          `INSERT INTO oauth_unfinished_people (identity_uid, note_time) VALUES (?, ?)
           ON CONFLICT (identity_uid) DO UPDATE SET note_time = excluded.note_time`,
          identityUid,
          now,
        );
      } else {
        yield* run(
          "UPDATE oauth_unfinished_people SET note_time = ? WHERE identity_uid = ?",
          now,
          identityUid,
        );
      }
    },
    { accessNeutral: true, autocommit: true },
  ),

  purgeSignIns: write(
    function* (now: number, unfinishedBefore: number, idleBefore: number) {
      // Sessions first: their codes and refresh tokens go with them (ON DELETE CASCADE), and
      // a session is ended once nothing live is left in it.
      const sessions = yield* run(
        `DELETE FROM oauth_sessions AS s WHERE s.revoke_time IS NOT NULL OR (
           NOT EXISTS (SELECT 1 FROM oauth_codes AS c
             WHERE c.session_id = s.id AND c.expire_time > ?)
           AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens AS t
             WHERE t.session_id = s.id AND t.expire_time > ?))`,
        now,
        now,
      );
      const purge: SignInPurge = {
        spentLogins: yield* run("DELETE FROM oauth_spent_logins WHERE expire_time <= ?", now),
        sessions,
        codes: yield* run("DELETE FROM oauth_codes WHERE expire_time <= ?", now),
        refreshTokens: yield* run("DELETE FROM oauth_refresh_tokens WHERE expire_time <= ?", now),
        unfinishedPeople: (yield* rows<{ identity_uid: string }>(
          `SELECT u.identity_uid FROM oauth_unfinished_people AS u
             JOIN identities AS i ON i.uid = u.identity_uid
           WHERE u.note_time <= ? AND i.last_seen_time <= u.note_time
             AND NOT EXISTS (SELECT 1 FROM oauth_sessions AS s WHERE s.identity_uid = u.identity_uid)
           ORDER BY u.note_time LIMIT 1000`,
          unfinishedBefore,
        )).map((r) => r.identity_uid),
        idlePeople: (yield* rows<{ uid: string }>(
          `SELECT i.uid FROM identities AS i WHERE ${idlePerson}
           ORDER BY i.last_seen_time, i.uid LIMIT 1000`,
          idleBefore,
        )).map((r) => r.uid),
      };
      return purge;
    },
    { accessNeutral: true },
  ),

  deleteIdlePerson: write(function* (uid: string, idleBefore: number) {
    // Checked again in the deleting transaction: a person who signed in, was bound or
    // created something since the purge found them is kept.
    if (
      !(yield* exists(
        `SELECT 1 FROM identities AS i WHERE i.uid = ? AND ${idlePerson}`,
        uid,
        idleBefore,
      ))
    ) {
      throw new StoreError("failed_precondition", `identity ${JSON.stringify(uid)} is not idle`);
    }
    yield* run("DELETE FROM identities WHERE uid = ?", uid);
  }),
} satisfies OpsOf<"spendLogin" | "noteUnfinishedSignIn" | "purgeSignIns" | "deleteIdlePerson">;
