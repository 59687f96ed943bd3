import type { GrantOutcome, SessionRevocation } from "../oauth-store.js";

/** An authorization code joined with its session, as both backends read it to redeem it. */
export interface CodeRow {
  session_id: string;
  redirect_uri: string;
  code_challenge: string;
  expire_time: number;
  redeem_time: number | null;
  identity_uid: string;
  client_id: string;
  revoke_time: number | null;
}

/** A refresh token joined with its session, as both backends read it to rotate it. */
export interface RefreshRow {
  session_id: string;
  expire_time: number;
  use_time: number | null;
  identity_uid: string;
  client_id: string;
  revoke_time: number | null;
}

/** The outcome of a code or token that is unknown, expired, revoked or for another client. */
export const invalid: GrantOutcome = { kind: "invalid" };
/** The outcome of a code or token used twice: the session of `identity_uid` is revoked. */
export function replayed(row: { identity_uid: string }): GrantOutcome {
  return { kind: "replayed", identityUid: row.identity_uid };
}

/** The outcome of a good code or token: the session's identity may have tokens. */
export function granted(row: { identity_uid: string; session_id: string }): GrantOutcome {
  return { kind: "granted", identityUid: row.identity_uid, sessionId: row.session_id };
}

/** The outcome of a sign-out of a session that was not there, or already ended. */
export const noSession: SessionRevocation = { kind: "unknown" };

/** The outcome of a sign-out that ended a session of `identityUid`. */
export function revoked(identityUid: string): SessionRevocation {
  return { kind: "revoked", identityUid };
}
