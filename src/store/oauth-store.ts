/**
 * The storage of people's sign-in (Gatehouse as an OAuth 2.0 authorization server): logins
 * in flight at the upstream identity provider, one-time authorization codes, sessions and
 * their rotating refresh tokens. Codes, refresh tokens and upstream states are stored as
 * hashes only; the caller hashes, the store never sees a secret it could leak.
 *
 * A session is one sign-in of one identity through one client. It is revoked by logout, by
 * the reuse of a rotated refresh token or the replay of its code, and it is deleted with its
 * identity. Access tokens issued in a session name it (`sid`), so they stop working with it.
 */
export interface OAuthStore {
  /**
   * Keep a login in flight until its `expireTime`, keyed by the hash of its upstream state.
   * Logins expired at `now` are swept first; if `max` unexpired logins are already waiting,
   * nothing is stored and the answer is false (anyone may start a login: this bounds what
   * strangers can make the database hold).
   */
  putPendingLogin(
    stateHash: string,
    login: PendingLogin,
    now: number,
    max: number,
  ): Promise<boolean>;
  /**
   * Take a login in flight: return it and delete it, so it completes at most once. Undefined
   * if unknown, already taken or expired at `now`. Expired logins are swept on the way.
   */
  takePendingLogin(stateHash: string, now: number): Promise<PendingLogin | undefined>;
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
  /** Revoke the session of a refresh token; false if no such token. */
  revokeSessionByRefreshToken(tokenHash: string, now: number): Promise<boolean>;
  /** Revoke a session by id (an access token's `sid`); false if no such session. */
  revokeSession(sessionId: string, now: number): Promise<boolean>;
  /** Whether the session exists and is not revoked. */
  sessionActive(sessionId: string): Promise<boolean>;
}

/** A login sent to the upstream identity provider, waiting for its answer. */
export interface PendingLogin {
  /** The downstream request being served: Gatehouse's own client. */
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  /** The client's `state`, echoed back to it. */
  clientState: string;
  /** Where the person signs in: "" for the server's login provider, else an IdP uid. */
  provider: string;
  /** Upstream: the nonce and PKCE verifier Gatehouse sent to the identity provider. */
  nonce: string;
  codeVerifier: string;
  expireTime: number;
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

/** The outcome of redeeming a code or rotating a refresh token. */
export type GrantOutcome =
  | { kind: "granted"; identityUid: string; sessionId: string }
  | { kind: "invalid" }
  | { kind: "replayed" }
  | { kind: "refused"; reason: string };
