import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * What the confirmation page of the device flow hands the person's browser, for its Approve and
 * Deny buttons: who signed in, for which user code, until when. Sealed (AES-256-GCM under a
 * secret every replica shares), so only a browser that signed in as that person holds one.
 */
export interface DeviceTicket {
  userCode: string;
  identityUid: string;
  expireTime: number;
}

/** Seals and opens device tickets. */
export interface DeviceTickets {
  seal(ticket: DeviceTicket): string;
  /** The ticket, if this server sealed `value`; else undefined. */
  open(value: string): DeviceTicket | undefined;
}

const ivBytes = 12;
const tagBytes = 16;
// Bound to their use: a value sealed for anything else under the same key never opens here.
const aad = Buffer.from("gatehouse device ticket v1");

/** Create the sealing of device tickets under `key` (32 bytes). */
export function createDeviceTickets(key: Uint8Array): DeviceTickets {
  if (key.length !== 32) throw new Error("the device ticket key must be 32 bytes");
  return {
    seal(ticket) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(aad);
      const body = Buffer.concat([cipher.update(JSON.stringify(ticket), "utf8"), cipher.final()]);
      return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
    },
    open(value) {
      const raw = Buffer.from(value, "base64url");
      if (raw.length <= ivBytes + tagBytes || raw.length > 2048) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, ivBytes));
        decipher.setAAD(aad);
        decipher.setAuthTag(raw.subarray(raw.length - tagBytes));
        const text = Buffer.concat([
          decipher.update(raw.subarray(ivBytes, raw.length - tagBytes)),
          decipher.final(),
        ]).toString("utf8");
        const t = JSON.parse(text) as Record<string, unknown>;
        if (
          typeof t.userCode !== "string" ||
          typeof t.identityUid !== "string" ||
          typeof t.expireTime !== "number"
        ) {
          return undefined;
        }
        return { userCode: t.userCode, identityUid: t.identityUid, expireTime: t.expireTime };
      } catch {
        return undefined; // tampered, or another server's key
      }
    },
  };
}
