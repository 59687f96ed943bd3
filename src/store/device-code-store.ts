import type { NewRefreshToken } from "./oauth-store.js";

/**
 * The storage of the OAuth device authorization grant (RFC 8628): a device code that a client
 * polls with, and the user code a person types on another device to approve it. Both are
 * stored as hashes only (the caller hashes), so a copy of the database signs no one in. Rows
 * live in the store, not in a replica's memory: any replica answers a poll, an approval on
 * one is seen by the next poll on another.
 */
export interface DeviceCodeStore {
  /**
   * Record a pending device authorization. Returns false, recording nothing, if another
   * unexpired authorization has the same user code (the caller draws another); an expired
   * one with that user code is dropped first.
   */
  createDeviceCode(code: NewDeviceCode): Promise<boolean>;
  /** The pending, unexpired authorization of a user code, or undefined. */
  pendingDeviceCode(userCodeHash: string, now: number): Promise<PendingDeviceCode | undefined>;
  /**
   * Approve (for `identityUid`) or deny (`identityUid` null) a pending, unexpired
   * authorization, atomically: true if this call decided it; false if it is unknown, expired
   * or already decided (each code is decided once, on any replica).
   */
  decideDeviceCode(userCodeHash: string, now: number, identityUid: string | null): Promise<boolean>;
  /**
   * A client's poll of its device code (RFC 8628 3.5), atomically: `invalid` if the code is
   * unknown, of another client or already redeemed; `expired` past its expiry; `slow_down`
   * (and the interval grows by 5 s) if polled sooner than the interval after the last poll;
   * then `pending` or `denied` as the person left it; `granted` once approved: a session of
   * the approving identity starts with `refresh` as its refresh token, and the code is spent.
   */
  pollDeviceCode(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    grant: { sessionId: string; refresh: NewRefreshToken },
  ): Promise<DevicePollOutcome>;
}

/** Input of createDeviceCode. */
export interface NewDeviceCode {
  deviceCodeHash: string;
  userCodeHash: string;
  clientId: string;
  /** Where the person signs in: "" for the server's login provider, else an IdP uid. */
  provider: string;
  intervalMs: number;
  expireTime: number;
  now: number;
}

/** A pending device authorization, as the verification page sees it. */
export interface PendingDeviceCode {
  clientId: string;
  provider: string;
  expireTime: number;
}

/** The outcome of a poll. */
export type DevicePollOutcome =
  | { kind: "granted"; identityUid: string; sessionId: string }
  | { kind: "pending" }
  | { kind: "slow_down"; intervalMs: number }
  | { kind: "denied" }
  | { kind: "expired" }
  | { kind: "invalid" };
