import type { GrantOutcome } from "../oauth-store.js";
import {
  type CodeRow,
  granted,
  invalid,
  noSession,
  type RefreshRow,
  replayed,
  revoked,
} from "../rows/oauth-rows.js";
import { StoreError } from "../store.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The sign-in operations of the PostgreSQL store. */
export type PgOAuthOps = PgOps<
  | "createAuthorizationCode"
  | "redeemAuthorizationCode"
  | "rotateRefreshToken"
  | "revokeSessionByRefreshToken"
  | "revokeSession"
  | "sessionActive"
>;

const getRefreshSql = `
  SELECT t.session_id, t.expire_time, t.use_time, s.identity_uid, s.client_id, s.revoke_time
  FROM oauth_refresh_tokens AS t JOIN oauth_sessions AS s ON s.id = t.session_id
  WHERE t.token_hash = $1`;

const insertRefreshSql =
  "INSERT INTO oauth_refresh_tokens (token_hash, session_id, expire_time) VALUES ($1, $2, $3)";

/**
 * Create the sign-in operations on a migrated database. Each check-then-write runs in one
 * SERIALIZABLE transaction: of two redemptions of one code, or two rotations of one refresh
 * token, racing on any replicas, both read the row unused and both write it, so PostgreSQL
 * aborts one; its retry reads the row used, and answers `replayed` (revoking the session).
 * Exactly one succeeds. `check` may run again on a retry: it must be a pure function.
 */
export function createPgOAuthOps(db: PgDb): PgOAuthOps {
  // A revoked session keeps its row (so its access tokens stay refused) but no refresh token.
  const revokeNow = async (sql: Sql, sessionId: string, now: number) => {
    await sql.run(
      "UPDATE oauth_sessions SET revoke_time = coalesce(revoke_time, $1) WHERE id = $2",
      [now, sessionId],
    );
    await sql.run("DELETE FROM oauth_refresh_tokens WHERE session_id = $1", [sessionId]);
  };
  const sessionRow = (sql: Sql, sessionId: string) =>
    sql.one<{ identity_uid: string; revoke_time: number | null }>(
      "SELECT identity_uid, revoke_time FROM oauth_sessions WHERE id = $1",
      [sessionId],
    );

  return {
    createAuthorizationCode: (c) =>
      db.write(async (sql) => {
        if (!(await sql.one("SELECT 1 FROM identities WHERE uid = $1", [c.identityUid]))) {
          throw new StoreError("not_found", `identity ${c.identityUid} not found`);
        }
        await sql.run(
          "INSERT INTO oauth_sessions (id, identity_uid, client_id, create_time) VALUES ($1, $2, $3, $4)",
          [c.sessionId, c.identityUid, c.clientId, c.now],
        );
        await sql.run(
          `INSERT INTO oauth_codes (code_hash, session_id, redirect_uri, code_challenge, expire_time)
           VALUES ($1, $2, $3, $4, $5)`,
          [c.codeHash, c.sessionId, c.redirectUri, c.codeChallenge, c.expireTime],
        );
      }),

    redeemAuthorizationCode: (codeHash, now, check, refresh) =>
      db.write(async (sql): Promise<GrantOutcome> => {
        const row = await sql.one<CodeRow>(
          `SELECT c.session_id, c.redirect_uri, c.code_challenge, c.expire_time, c.redeem_time,
             s.identity_uid, s.client_id, s.revoke_time
           FROM oauth_codes AS c JOIN oauth_sessions AS s ON s.id = c.session_id
           WHERE c.code_hash = $1`,
          [codeHash],
        );
        if (!row || row.revoke_time !== null) return invalid;
        if (row.redeem_time !== null) {
          await revokeNow(sql, row.session_id, now);
          return replayed(row);
        }
        if (row.expire_time <= now) return invalid;
        const reason = check({
          clientId: row.client_id,
          redirectUri: row.redirect_uri,
          codeChallenge: row.code_challenge,
        });
        if (reason !== undefined) return { kind: "refused", reason };
        await sql.run("UPDATE oauth_codes SET redeem_time = $1 WHERE code_hash = $2", [
          now,
          codeHash,
        ]);
        // A redeemed code completes the person's sign-in (sign-in-upkeep.ts).
        await sql.run("DELETE FROM oauth_unfinished_people WHERE identity_uid = $1", [
          row.identity_uid,
        ]);
        await sql.run(insertRefreshSql, [refresh.tokenHash, row.session_id, refresh.expireTime]);
        return granted(row);
      }),

    rotateRefreshToken: (tokenHash, clientId, now, next) =>
      db.write(async (sql): Promise<GrantOutcome> => {
        const row = await sql.one<RefreshRow>(getRefreshSql, [tokenHash]);
        if (!row || row.revoke_time !== null || row.client_id !== clientId) return invalid;
        if (row.use_time !== null) {
          await revokeNow(sql, row.session_id, now);
          return replayed(row);
        }
        if (row.expire_time <= now) return invalid;
        await sql.run("UPDATE oauth_refresh_tokens SET use_time = $1 WHERE token_hash = $2", [
          now,
          tokenHash,
        ]);
        await sql.run(insertRefreshSql, [next.tokenHash, row.session_id, next.expireTime]);
        return granted(row);
      }),

    revokeSessionByRefreshToken: (tokenHash, now) =>
      db.write(async (sql) => {
        const row = await sql.one<RefreshRow>(getRefreshSql, [tokenHash]);
        if (!row || row.revoke_time !== null) return noSession;
        await revokeNow(sql, row.session_id, now);
        return revoked(row.identity_uid);
      }),

    revokeSession: (sessionId, now) =>
      db.write(async (sql) => {
        const row = await sessionRow(sql, sessionId);
        if (!row || row.revoke_time !== null) return noSession;
        await revokeNow(sql, sessionId, now);
        return revoked(row.identity_uid);
      }),

    sessionActive: async (sessionId) => {
      const row = await sessionRow(db.sql, sessionId);
      return row !== undefined && row.revoke_time === null;
    },
  };
}
