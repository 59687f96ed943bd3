import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The header a delivery's signature travels in. */
export const signatureHeader = "Gatehouse-Signature";

/** A new subscription secret: 32 random bytes, base64url, with a prefix that names it. */
export function newSubscriptionSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

/**
 * The Gatehouse-Signature value of `body` sent at `unixSeconds`:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the secret's UTF-8 bytes>`.
 */
export function sign(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * Whether `header` is a valid signature of `body` under `secret`, made at most `toleranceS`
 * seconds from `nowS` (a receiver's check, as docs/events.md shows it).
 */
export function verify(
  secret: string,
  body: string,
  header: string,
  nowS: number,
  toleranceS = 300,
): boolean {
  const parts = new Map(
    header.split(",").map((kv) => {
      const i = kv.indexOf("=");
      return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const;
    }),
  );
  const t = Number(parts.get("t"));
  const v1 = parts.get("v1") ?? "";
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS) return false;
  const want = Buffer.from(sign(secret, body, t).split("v1=")[1]!, "hex");
  const got = Buffer.from(v1, "hex");
  return got.length === want.length && timingSafeEqual(got, want);
}
