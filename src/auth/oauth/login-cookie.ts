import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

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
  /**
   * A device flow's sign-in (device-routes.ts): the user code the person typed, to approve
   * after the sign-in instead of sending a code back to a client.
   */
  deviceUserCode?: string;
}

/**
 * A login in flight lives in the browser that started it, as a cookie: sealed (AES-256-GCM
 * under a server secret), bound to the upstream state it was sent with (the state's hash is
 * the additional data), and sent back only under /oauth/. A browser keeps its logins in one
 * cookie (login-slots.ts). A callback arriving in another browser (a login forced on someone:
 * login CSRF) finds no login for its state and is refused; one arriving twice finds its login
 * spent (the store records it).
 */
export interface LoginCookies {
  /** The sealed value. */
  seal(stateHash: string, login: PendingLogin): string;
  /** The login, if `value` was sealed by this server for `stateHash`; else undefined. */
  open(stateHash: string, value: string): PendingLogin | undefined;
}

const ivBytes = 12;
const tagBytes = 16;

/** Create the sealing of login cookies under `key` (32 bytes, the same on every replica). */
export function createLoginCookies(key: Uint8Array): LoginCookies {
  if (key.length !== 32) throw new Error("the login cookie key must be 32 bytes");
  return {
    seal(stateHash, login) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(stateHash));
      const body = Buffer.concat([cipher.update(JSON.stringify(login), "utf8"), cipher.final()]);
      return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
    },
    open(stateHash, value) {
      const raw = Buffer.from(value, "base64url");
      if (raw.length <= ivBytes + tagBytes) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, ivBytes));
        decipher.setAAD(Buffer.from(stateHash));
        decipher.setAuthTag(raw.subarray(raw.length - tagBytes));
        const text = Buffer.concat([
          decipher.update(raw.subarray(ivBytes, raw.length - tagBytes)),
          decipher.final(),
        ]).toString("utf8");
        return asPendingLogin(JSON.parse(text));
      } catch {
        return undefined; // tampered, another server's key, or another login's
      }
    },
  };
}

/** The value of cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function asPendingLogin(v: unknown): PendingLogin | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const strings = [
    "clientId",
    "redirectUri",
    "codeChallenge",
    "clientState",
    "provider",
    "nonce",
    "codeVerifier",
  ] as const;
  for (const k of strings) if (typeof o[k] !== "string") return undefined;
  if (typeof o.expireTime !== "number") return undefined;
  if (o.deviceUserCode !== undefined && typeof o.deviceUserCode !== "string") return undefined;
  return o as unknown as PendingLogin;
}
