import type {
  AuthorizationCodeRecord,
  GrantOutcome,
  NewAuthorizationCode,
  NewRefreshToken,
  SessionRevocation,
} from "../oauth-store.js";
import {
  type CodeRow,
  granted,
  invalid,
  noSession,
  type RefreshRow,
  replayed,
  revoked,
} from "../rows/oauth-rows.js";
import { notFoundError } from "../store.js";
import { exists, type OpsOf, one, read, run, type Steps, write } from "./operation.js";

const getRefresh = `
  SELECT t.session_id, t.expire_time, t.use_time, s.identity_uid, s.client_id, s.revoke_time
  FROM oauth_refresh_tokens AS t JOIN oauth_sessions AS s ON s.id = t.session_id
  WHERE t.token_hash = ?`;

const insertRefresh =
  "INSERT INTO oauth_refresh_tokens (token_hash, session_id, expire_time) VALUES (?, ?, ?)";

// A revoked session keeps its row (so its access tokens stay refused) but no refresh token.
function* revokeNow(sessionId: string, now: number): Steps<void> {
  yield* run(
    "UPDATE oauth_sessions SET revoke_time = coalesce(revoke_time, ?) WHERE id = ?",
    now,
    sessionId,
  );
  yield* run("DELETE FROM oauth_refresh_tokens WHERE session_id = ?", sessionId);
}

function* sessionRow(sessionId: string) {
  return yield* one<{ identity_uid: string; revoke_time: number | null }>(
    "SELECT identity_uid, revoke_time FROM oauth_sessions WHERE id = ?",
    sessionId,
  );
}

// No access answer depends on a session: they leave the access caches warm.
const neutral = { accessNeutral: true };

/**
 * The sign-in operations of both backends. Each check-then-write runs in one transaction: on
 * SQLite an immediate one (its single writer), so two redemptions of one code, or two
 * rotations of one refresh token, cannot both succeed, even from two processes; on
 * PostgreSQL a SERIALIZABLE one, so of two racing on any replicas PostgreSQL aborts one, whose
 * retry reads the row used and answers `replayed` (revoking the session). `check` may run
 * again on a retry: it must be a pure function.
 */
export const oauthOps = {
  createAuthorizationCode: write(function* (c: NewAuthorizationCode) {
    if (!(yield* exists("SELECT 1 FROM identities WHERE uid = ?", c.identityUid))) {
      throw notFoundError("identity", c.identityUid);
    }
    yield* run(
      "INSERT INTO oauth_sessions (id, identity_uid, client_id, create_time) VALUES (?, ?, ?, ?)",
      c.sessionId,
      c.identityUid,
      c.clientId,
      c.now,
    );
    yield* run(
      `INSERT INTO oauth_codes (code_hash, session_id, redirect_uri, code_challenge, expire_time)
       VALUES (?, ?, ?, ?, ?)`,
      c.codeHash,
      c.sessionId,
      c.redirectUri,
      c.codeChallenge,
      c.expireTime,
    );
  }, neutral),

  redeemAuthorizationCode: write(function* (
    codeHash: string,
    now: number,
    check: (code: AuthorizationCodeRecord) => string | undefined,
    refresh: NewRefreshToken,
  ): Steps<GrantOutcome> {
    const row = yield* one<CodeRow>(
      `SELECT c.session_id, c.redirect_uri, c.code_challenge, c.expire_time, c.redeem_time,
         s.identity_uid, s.client_id, s.revoke_time
       FROM oauth_codes AS c JOIN oauth_sessions AS s ON s.id = c.session_id
       WHERE c.code_hash = ?`,
      codeHash,
    );
    if (!row || row.revoke_time !== null) return invalid;
    if (row.redeem_time !== null) {
      yield* revokeNow(row.session_id, now);
      return replayed(row);
    }
    if (row.expire_time <= now) return invalid;
    const reason = check({
      clientId: row.client_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
    });
    if (reason !== undefined) return { kind: "refused", reason };
    yield* run("UPDATE oauth_codes SET redeem_time = ? WHERE code_hash = ?", now, codeHash);
    // A redeemed code completes the person's sign-in (sign-in-upkeep.ts).
    yield* run("DELETE FROM oauth_unfinished_people WHERE identity_uid = ?", row.identity_uid);
    yield* run(insertRefresh, refresh.tokenHash, row.session_id, refresh.expireTime);
    return granted(row);
  }, neutral),

  rotateRefreshToken: write(function* (
    tokenHash: string,
    clientId: string,
    now: number,
    next: NewRefreshToken,
  ): Steps<GrantOutcome> {
    const row = yield* one<RefreshRow>(getRefresh, tokenHash);
    if (!row || row.revoke_time !== null || row.client_id !== clientId) return invalid;
    if (row.use_time !== null) {
      yield* revokeNow(row.session_id, now);
      return replayed(row);
    }
    if (row.expire_time <= now) return invalid;
    yield* run("UPDATE oauth_refresh_tokens SET use_time = ? WHERE token_hash = ?", now, tokenHash);
    yield* run(insertRefresh, next.tokenHash, row.session_id, next.expireTime);
    return granted(row);
  }, neutral),

  revokeSessionByRefreshToken: write(function* (
    tokenHash: string,
    now: number,
  ): Steps<SessionRevocation> {
    const row = yield* one<RefreshRow>(getRefresh, tokenHash);
    if (!row || row.revoke_time !== null) return noSession;
    yield* revokeNow(row.session_id, now);
    return revoked(row.identity_uid);
  }, neutral),

  revokeSession: write(function* (sessionId: string, now: number): Steps<SessionRevocation> {
    const row = yield* sessionRow(sessionId);
    if (!row || row.revoke_time !== null) return noSession;
    yield* revokeNow(sessionId, now);
    return revoked(row.identity_uid);
  }, neutral),

  sessionActive: read(function* (sessionId: string) {
    const row = yield* sessionRow(sessionId);
    return row !== undefined && row.revoke_time === null;
  }),
} satisfies OpsOf<
  | "createAuthorizationCode"
  | "redeemAuthorizationCode"
  | "rotateRefreshToken"
  | "revokeSessionByRefreshToken"
  | "revokeSession"
  | "sessionActive"
>;
