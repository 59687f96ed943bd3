import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createKeyRing } from "../../src/auth/keyring.js";
import { libtrustKeyId } from "../../src/registry/libtrust.js";
import { trustBundle } from "../../src/registry/trust-bundle.js";
import { memoryKeyStore } from "../auth/memory-key-store.js";

const hour = 3_600_000;

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
});
