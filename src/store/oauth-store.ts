/**
 * The storage of people's sign-in (Gatehouse as an OAuth 2.0 authorization server): one-time
 * authorization codes, sessions and their rotating refresh tokens. Codes and refresh tokens
 * are stored as hashes only; the caller hashes, the store never sees a secret it could leak.
 * (Logins in flight at the upstream identity provider are kept by the browser, in a sealed
 * cookie: src/auth/oauth/login-cookie.ts.)
 *
 * A session is one sign-in of one identity through one client. It is revoked by logout, by
 * the reuse of a rotated refresh token or the replay of its code, and it is deleted with its
 * identity. Access tokens issued in a session name it (`sid`), so they stop working with it.
 */
export interface OAuthStore {
  /**
   * Start a session for `identityUid` and record its authorization code. Throws `not_found`
   * if the identity does not exist.
   */
  createAuthorizationCode(code: NewAuthorizationCode): Promise<void>;
  /**
   * Redeem a code, atomically: if it is unknown or expired, `{ kind: "invalid" }`; if it was
   * already redeemed, its session is revoked and `{ kind: "replayed" }`; if `check` returns
   * a reason the code stays unredeemed and `{ kind: "refused", reason }`; otherwise the code
   * is marked redeemed, `refresh` becomes the session's refresh token, and the session's
   * identity is returned.
   */
  redeemAuthorizationCode(
    codeHash: string,
    now: number,
    check: (code: AuthorizationCodeRecord) => string | undefined,
    refresh: NewRefreshToken,
  ): Promise<GrantOutcome>;
  /**
   * Rotate a refresh token, atomically: if it is unknown, expired, of another client or of a
   * revoked session, `{ kind: "invalid" }`; if it was already rotated (a reuse), the whole
   * session is revoked and `{ kind: "replayed" }`; otherwise it is marked used and `next`
   * takes its place.
   */
  rotateRefreshToken(
    tokenHash: string,
    clientId: string,
    now: number,
    next: NewRefreshToken,
  ): Promise<GrantOutcome>;
  /**
   * Revoke the session of a refresh token (a sign-out): the identity whose session ended, or
   * `unknown` if no such token.
   */
  revokeSessionByRefreshToken(tokenHash: string, now: number): Promise<SessionRevocation>;
  /**
   * Revoke a session by id (an access token's `sid`): the identity whose session ended, or
   * `unknown` if no such session or it was already revoked (nothing changed).
   */
  revokeSession(sessionId: string, now: number): Promise<SessionRevocation>;
  /** Whether the session exists and is not revoked. */
  sessionActive(sessionId: string): Promise<boolean>;
}

/** Input of createAuthorizationCode. */
export interface NewAuthorizationCode {
  codeHash: string;
  sessionId: string;
  identityUid: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  expireTime: number;
  now: number;
}

/** What a code was issued for, as `check` sees it. */
export interface AuthorizationCodeRecord {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
}

/** A refresh token to store: its hash and when it stops being accepted. */
export interface NewRefreshToken {
  tokenHash: string;
  expireTime: number;
}

/**
 * The outcome of a sign-out. The identity names the event of the sign-out
 * (src/events/audit-scope.ts); `unknown` changed nothing and records none.
 */
export type SessionRevocation = { kind: "revoked"; identityUid: string } | { kind: "unknown" };

/** The outcome of redeeming a code or rotating a refresh token. */
export type GrantOutcome =
  | { kind: "granted"; identityUid: string; sessionId: string }
  | { kind: "invalid" }
  | { kind: "replayed"; identityUid: string }
  | { kind: "refused"; reason: string };
