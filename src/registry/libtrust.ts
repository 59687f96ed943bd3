import { createHash, createPublicKey } from "node:crypto";
import type { PublicJwk } from "../auth/keyring.js";

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 without padding. */
function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The libtrust key ID of a public key, which distribution (the registry) looks a token's
 * `kid` up by among the keys of its `rootcertbundle`: the SHA-256 of the DER
 * SubjectPublicKeyInfo, its first 240 bits in base32, as 12 groups of 4 joined by `:`.
 */
export function libtrustKeyId(jwk: PublicJwk): string {
  const der = createPublicKey({
    key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y },
    format: "jwk",
  }).export({ type: "spki", format: "der" });
  const id = base32(createHash("sha256").update(der).digest().subarray(0, 30));
  return id.match(/.{4}/g)!.join(":");
}
