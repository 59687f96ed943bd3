import type { Database } from "better-sqlite3";
import type { SessionRevocation } from "../oauth-store.js";
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
import type { SyncOps } from "./sync-ops.js";

/** The sign-in operations of the SQLite store. */
export type OAuthOps = SyncOps<
  | "createAuthorizationCode"
  | "redeemAuthorizationCode"
  | "rotateRefreshToken"
  | "revokeSessionByRefreshToken"
  | "revokeSession"
  | "sessionActive"
>;

/**
 * Create the sign-in operations on an open, migrated database. Each check-then-write runs in
 * one immediate transaction (SQLite's single writer), so two redemptions of one code, or two
 * rotations of one refresh token, cannot both succeed, even from two processes.
 */
export function createOAuthOps(db: Database): OAuthOps {
  const identityExists = db.prepare("SELECT 1 FROM identities WHERE uid = ?");
  const insertSession = db.prepare(
    "INSERT INTO oauth_sessions (id, identity_uid, client_id, create_time) VALUES (?, ?, ?, ?)",
  );
  const insertCode = db.prepare(
    `INSERT INTO oauth_codes (code_hash, session_id, redirect_uri, code_challenge, expire_time)
     VALUES (?, ?, ?, ?, ?)`,
  );
  const getCode = db.prepare(
    `SELECT c.session_id, c.redirect_uri, c.code_challenge, c.expire_time, c.redeem_time,
       s.identity_uid, s.client_id, s.revoke_time
     FROM oauth_codes AS c JOIN oauth_sessions AS s ON s.id = c.session_id
     WHERE c.code_hash = ?`,
  );
  const redeemCode = db.prepare("UPDATE oauth_codes SET redeem_time = ? WHERE code_hash = ?");
  // A redeemed code completes the person's sign-in (sign-in-upkeep.ts).
  const finished = db.prepare("DELETE FROM oauth_unfinished_people WHERE identity_uid = ?");
  const insertRefresh = db.prepare(
    "INSERT INTO oauth_refresh_tokens (token_hash, session_id, expire_time) VALUES (?, ?, ?)",
  );
  const getRefresh = db.prepare(
    `SELECT t.session_id, t.expire_time, t.use_time, s.identity_uid, s.client_id, s.revoke_time
     FROM oauth_refresh_tokens AS t JOIN oauth_sessions AS s ON s.id = t.session_id
     WHERE t.token_hash = ?`,
  );
  const useRefresh = db.prepare(
    "UPDATE oauth_refresh_tokens SET use_time = ? WHERE token_hash = ?",
  );
  const revoke = db.prepare(
    "UPDATE oauth_sessions SET revoke_time = coalesce(revoke_time, ?) WHERE id = ?",
  );
  // A revoked session keeps its row (so its access tokens stay refused) but no refresh token.
  const dropRefresh = db.prepare("DELETE FROM oauth_refresh_tokens WHERE session_id = ?");
  const active = db.prepare("SELECT revoke_time FROM oauth_sessions WHERE id = ?");
  const session = db.prepare("SELECT identity_uid, revoke_time FROM oauth_sessions WHERE id = ?");

  const revokeNow = (sessionId: string, now: number) => {
    revoke.run(now, sessionId);
    dropRefresh.run(sessionId);
  };

  const redeem = db.transaction(
    (...[codeHash, now, check, refresh]: Parameters<OAuthOps["redeemAuthorizationCode"]>) => {
      const row = getCode.get(codeHash) as CodeRow | undefined;
      if (!row || row.revoke_time !== null) return invalid;
      if (row.redeem_time !== null) {
        revokeNow(row.session_id, now);
        return replayed(row);
      }
      if (row.expire_time <= now) return invalid;
      const reason = check({
        clientId: row.client_id,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
      });
      if (reason !== undefined) return { kind: "refused", reason } as const;
      redeemCode.run(now, codeHash);
      finished.run(row.identity_uid);
      insertRefresh.run(refresh.tokenHash, row.session_id, refresh.expireTime);
      return granted(row);
    },
  ).immediate;

  const rotate = db.transaction(
    (...[tokenHash, clientId, now, next]: Parameters<OAuthOps["rotateRefreshToken"]>) => {
      const row = getRefresh.get(tokenHash) as RefreshRow | undefined;
      if (!row || row.revoke_time !== null || row.client_id !== clientId) return invalid;
      if (row.use_time !== null) {
        revokeNow(row.session_id, now);
        return replayed(row);
      }
      if (row.expire_time <= now) return invalid;
      useRefresh.run(now, tokenHash);
      insertRefresh.run(next.tokenHash, row.session_id, next.expireTime);
      return granted(row);
    },
  ).immediate;

  const revokeByRefresh = db.transaction((tokenHash: string, now: number): SessionRevocation => {
    const row = getRefresh.get(tokenHash) as RefreshRow | undefined;
    if (!row || row.revoke_time !== null) return noSession;
    revokeNow(row.session_id, now);
    return revoked(row.identity_uid);
  }).immediate;

  const revokeById = db.transaction((sessionId: string, now: number): SessionRevocation => {
    const row = session.get(sessionId) as
      | { identity_uid: string; revoke_time: number | null }
      | undefined;
    if (!row || row.revoke_time !== null) return noSession;
    revokeNow(sessionId, now);
    return revoked(row.identity_uid);
  }).immediate;

  const createCode = db.transaction((...[c]: Parameters<OAuthOps["createAuthorizationCode"]>) => {
    if (identityExists.get(c.identityUid) === undefined) {
      throw new StoreError("not_found", `identity ${c.identityUid} not found`);
    }
    insertSession.run(c.sessionId, c.identityUid, c.clientId, c.now);
    insertCode.run(c.codeHash, c.sessionId, c.redirectUri, c.codeChallenge, c.expireTime);
  }).immediate;

  return {
    createAuthorizationCode: createCode,
    redeemAuthorizationCode: redeem,
    rotateRefreshToken: rotate,
    revokeSessionByRefreshToken: revokeByRefresh,
    revokeSession: revokeById,
    sessionActive: (sessionId) => {
      const row = active.get(sessionId) as { revoke_time: number | null } | undefined;
      return row !== undefined && row.revoke_time === null;
    },
  };
}
