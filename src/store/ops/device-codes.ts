import type { DevicePollOutcome, NewDeviceCode, PendingDeviceCode } from "../device-code-store.js";
import type { NewRefreshToken } from "../oauth-store.js";
import { type OpsOf, one, read, run, type Steps, write } from "./operation.js";

/** A device authorization as both backends read it. */
interface DeviceRow {
  client_id: string;
  provider: string;
  interval_ms: number;
  expire_time: number;
  poll_time: number | null;
  status: "pending" | "approved" | "denied" | "redeemed";
  identity_uid: string | null;
}

/** RFC 8628 3.5: each slow_down adds 5 seconds to the interval, for this and later polls. */
const slowDownStepMs = 5000;

// No access answer depends on a device code: the access caches stay warm.
const neutral = { accessNeutral: true };

/**
 * The device authorization operations of both backends (DeviceCodeStore). Each decision and
 * each poll is one transaction (SQLite's single writer, PostgreSQL SERIALIZABLE with retries),
 * so a code is decided once and redeemed once even when replicas race.
 */
export const deviceCodeOps = {
  createDeviceCode: write(function* (c: NewDeviceCode): Steps<boolean> {
    yield* run(
      "DELETE FROM oauth_device_codes WHERE user_code_hash = ? AND expire_time <= ?",
      c.userCodeHash,
      c.now,
    );
    const inserted = yield* run(
      `INSERT INTO oauth_device_codes (device_code_hash, user_code_hash, client_id, provider,
         interval_ms, expire_time, status, create_time)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)
       ON CONFLICT DO NOTHING`,
      c.deviceCodeHash,
      c.userCodeHash,
      c.clientId,
      c.provider,
      c.intervalMs,
      c.expireTime,
      c.now,
    );
    return inserted === 1;
  }, neutral),

  pendingDeviceCode: read(function* (
    userCodeHash: string,
    now: number,
  ): Steps<PendingDeviceCode | undefined> {
    const row = yield* one<DeviceRow>(
      "SELECT * FROM oauth_device_codes WHERE user_code_hash = ?",
      userCodeHash,
    );
    if (row?.status !== "pending" || row.expire_time <= now) return undefined;
    return { clientId: row.client_id, provider: row.provider, expireTime: row.expire_time };
  }),

  decideDeviceCode: write(function* (
    userCodeHash: string,
    now: number,
    identityUid: string | null,
  ): Steps<boolean> {
    const decided = yield* run(
      `UPDATE oauth_device_codes SET status = ?, identity_uid = ?
       WHERE user_code_hash = ? AND status = 'pending' AND expire_time > ?`,
      identityUid === null ? "denied" : "approved",
      identityUid,
      userCodeHash,
      now,
    );
    return decided === 1;
  }, neutral),

  pollDeviceCode: write(function* (
    deviceCodeHash: string,
    clientId: string,
    now: number,
    grant: { sessionId: string; refresh: NewRefreshToken },
  ): Steps<DevicePollOutcome> {
    const row = yield* one<DeviceRow>(
      "SELECT * FROM oauth_device_codes WHERE device_code_hash = ?",
      deviceCodeHash,
    );
    if (!row || row.client_id !== clientId || row.status === "redeemed") return { kind: "invalid" };
    if (row.expire_time <= now) return { kind: "expired" };
    if (row.poll_time !== null && now - row.poll_time < row.interval_ms) {
      const intervalMs = row.interval_ms + slowDownStepMs;
      yield* run(
        "UPDATE oauth_device_codes SET interval_ms = ?, poll_time = ? WHERE device_code_hash = ?",
        intervalMs,
        now,
        deviceCodeHash,
      );
      return { kind: "slow_down", intervalMs };
    }
    if (row.status !== "approved" || row.identity_uid === null) {
      yield* run(
        "UPDATE oauth_device_codes SET poll_time = ? WHERE device_code_hash = ?",
        now,
        deviceCodeHash,
      );
      return row.status === "denied" ? { kind: "denied" } : { kind: "pending" };
    }
    const identityUid = row.identity_uid;
    yield* run(
      "UPDATE oauth_device_codes SET status = 'redeemed', poll_time = ? WHERE device_code_hash = ?",
      now,
      deviceCodeHash,
    );
    yield* run(
      "INSERT INTO oauth_sessions (id, identity_uid, client_id, create_time) VALUES (?, ?, ?, ?)",
      grant.sessionId,
      identityUid,
      clientId,
      now,
    );
    yield* run(
      "INSERT INTO oauth_refresh_tokens (token_hash, session_id, expire_time) VALUES (?, ?, ?)",
      grant.refresh.tokenHash,
      grant.sessionId,
      grant.refresh.expireTime,
    );
    // A redeemed device code completes the person's sign-in (sign-in-upkeep.ts).
    yield* run("DELETE FROM oauth_unfinished_people WHERE identity_uid = ?", identityUid);
    return { kind: "granted", identityUid, sessionId: grant.sessionId };
  }, neutral),
} satisfies OpsOf<"createDeviceCode" | "pendingDeviceCode" | "decideDeviceCode" | "pollDeviceCode">;
