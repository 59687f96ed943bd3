import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createKeyRing } from "../../src/auth/keyring.js";
import { libtrustKeyId } from "../../src/registry/libtrust.js";
import { selfSignedCertificate, trustBundle } from "../../src/registry/trust-bundle.js";
import { memoryKeyStore } from "../auth/memory-key-store.js";

const hour = 3_600_000;

/** The tag, the length and where the body starts of the DER element at `at`. */
function header(der: Buffer, at: number): { tag: number; length: number; body: number } {
  const first = der[at + 1]!;
  if (first < 0x80) return { tag: der[at]!, length: first, body: at + 2 };
  const n = first & 0x7f;
  return { tag: der[at]!, length: der.readUIntBE(at + 2, n), body: at + 2 + n };
}

describe("the pending next key and the trust bundle", () => {
  it("publishes a pending key without signing with it, and rotate promotes exactly it", async () => {
    const store = memoryKeyStore();
    const c = { t: Date.UTC(2026, 0, 1) };
    const ring = createKeyRing({ store, now: () => c.t, refreshIntervalMs: 0 });
    await ring.ensureKey();
    const first = (await ring.signingKey()).kid;
    const next = await ring.prepareNext();
    expect(next).not.toBe(first);
    // Asked again, the same pending key.
    expect(await ring.prepareNext()).toBe(next);
    expect((await ring.signingKey()).kid).toBe(first);
    expect((await ring.publicJwks()).keys.map((k) => k.kid).sort()).toEqual([first, next].sort());
    c.t += hour;
    expect(await ring.rotate()).toBe(next);
    expect((await ring.signingKey()).kid).toBe(next);
    // No pending key left: the next rotation makes a new one.
    c.t += hour;
    const third = await ring.rotate();
    expect([first, next]).not.toContain(third);
    expect((await ring.signingKey()).kid).toBe(third);
  });

  it("holds a certificate per key whose public key registries find by the libtrust kid", async () => {
    const store = memoryKeyStore();
    const ring = createKeyRing({ store });
    await ring.ensureKey();
    await ring.prepareNext();
    const now = Date.now();
    const pem = trustBundle(store.records, now);
    const certs = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
    expect(certs).toHaveLength(2);
    const jwks = (await ring.publicJwks()).keys;
    for (const [i, text] of certs.entries()) {
      const cert = new X509Certificate(text);
      // Self-signed, valid now and for years.
      expect(cert.verify(cert.publicKey)).toBe(true);
      expect(cert.checkIssued(cert)).toBe(true);
      expect(Date.parse(cert.validTo)).toBeGreaterThan(now + 5 * 365 * 24 * hour);
      expect(Date.parse(cert.validFrom)).toBeLessThan(now);
      const jwk = cert.publicKey.export({ format: "jwk" });
      const own = jwks.find((k) => k.x === jwk.x && k.y === jwk.y);
      expect(own?.kid).toBe(store.records[i]?.kid);
      expect(libtrustKeyId(own!)).toMatch(/^([A-Z2-7]{4}:){11}[A-Z2-7]{4}$/);
    }
  });

  it("encodes every serial number in minimal DER, which Go's x509 (distribution) requires", async () => {
    const store = memoryKeyStore();
    await createKeyRing({ store }).ensureKey();
    const record = store.records[0]!;
    // A random serial whose first byte came out 0x00 once made distribution panic at start
    // ("x509: malformed serial number"): look at many, since each is random.
    for (let i = 0; i < 1_000; i++) {
      const pem = selfSignedCertificate(record, "k", Date.now());
      const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64");
      // Certificate SEQUENCE > tbsCertificate SEQUENCE > version [0], then the serial INTEGER.
      const cert = header(der, 0);
      const tbs = header(der, cert.body);
      const version = header(der, tbs.body);
      const serialAt = header(der, version.body + version.length);
      expect([cert.tag, tbs.tag, version.tag, serialAt.tag]).toEqual([0x30, 0x30, 0xa0, 0x02]);
      const serial = der.subarray(serialAt.body, serialAt.body + serialAt.length);
      const redundantZero = serial[0] === 0 && serial.length > 1 && serial[1]! < 0x80;
      expect(redundantZero || serial[0]! >= 0x80).toBe(false);
    }
  });
});
