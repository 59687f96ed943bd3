import { createPrivateKey, createPublicKey, randomBytes, sign } from "node:crypto";
import type { SigningKeyRecord } from "../store/store.js";

const dayMs = 86_400_000;

// DER, the few types a certificate needs.
function der(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const len =
    n < 0x80
      ? Buffer.from([n])
      : n < 0x100
        ? Buffer.from([0x81, n])
        : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const seq = (...items: Buffer[]) => der(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => der(0x31, Buffer.concat(items));
const oid = (hex: string) => der(0x06, Buffer.from(hex, "hex"));
const utf8 = (s: string) => der(0x0c, Buffer.from(s, "utf8"));
const bits = (b: Buffer) => der(0x03, Buffer.concat([Buffer.from([0]), b]));
const explicit = (n: number, b: Buffer) => der(0xa0 + n, b);
function integer(b: Buffer): Buffer {
  // Positive: a leading 1 bit would read as negative.
  return der(0x02, b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}
function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString().replace(/[-:T]/g, "").slice(0, 14);
  // UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5).
  return Number(iso.slice(0, 4)) < 2050
    ? der(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : der(0x18, Buffer.from(`${iso}Z`));
}

// ecdsa-with-SHA256 (1.2.840.10045.4.3.2) and commonName (2.5.4.3).
const ecdsaWithSha256 = seq(oid("2a8648ce3d040302"));
const commonName = oid("550403");

/**
 * A self-signed X.509 v3 certificate (PEM) for one signing key: subject and issuer the CN
 * given, valid from a day before `now` for ten years, signed ECDSA-SHA256 by the key itself.
 * Node can read certificates but not write them; the one shape needed here is a few lines of
 * DER (a certificate library pulled in a global reflection polyfill).
 */
export function selfSignedCertificate(record: SigningKeyRecord, cn: string, now: number): string {
  const privateKey = createPrivateKey({ key: JSON.parse(record.privateJwk), format: "jwk" });
  const spki = createPublicKey(privateKey).export({ type: "spki", format: "der" });
  const name = seq(set(seq(commonName, utf8(cn))));
  // A positive serial in minimal DER: a first byte of 0x40-0x7f needs no leading zero and
  // is not one (Go's x509, which distribution uses, refuses a redundant leading 0x00).
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaWithSha256,
    name,
    seq(time(now - dayMs), time(now + 3650 * dayMs)),
    name,
    spki,
  );
  const signature = sign("sha256", tbs, { key: privateKey, dsaEncoding: "der" });
  const cert = seq(tbs, ecdsaWithSha256, bits(signature));
  const b64 = cert
    .toString("base64")
    .match(/.{1,64}/g)!
    .join("\n");
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/**
 * A PEM bundle of one self-signed certificate per signing key, for a registry's
 * `auth.token.rootcertbundle`. Distribution takes each certificate's public key as a trusted
 * token key, found by the token's libtrust `kid`: the certificates only carry the keys.
 */
export function trustBundle(records: readonly SigningKeyRecord[], now: number): string {
  return records
    .map((r) => selfSignedCertificate(r, `Gatehouse token signing key ${r.kid}`, now))
    .join("");
}
