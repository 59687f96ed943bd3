import { describe, expect, it } from "vitest";
import { createKeyRing } from "../../src/auth/keyring.js";
import { createTokenIssuer, createTokenVerifier } from "../../src/auth/tokens.js";
import { StoreError } from "../../src/store/store.js";
import { memoryKeyStore } from "./memory-key-store.js";

const hour = 3_600_000;

function clock(start = Date.UTC(2026, 0, 1)) {
  const c = { t: start, now: () => c.t };
  return c;
}

function tokensFor(keyRing: ReturnType<typeof createKeyRing>, now: () => number) {
  const common = { keyRing, issuer: "https://auth.test", now };
  return {
    issuer: createTokenIssuer(common),
    verifier: createTokenVerifier({ ...common, audience: "https://api.test" }),
  };
}

describe("key ring", () => {
  it("creates exactly one key on first start and publishes only its public half", async () => {
    const store = memoryKeyStore();
    const ring = createKeyRing({ store });
    await ring.ensureKey();
    await ring.ensureKey();
    expect(store.records).toHaveLength(1);
    const { keys } = await ring.publicJwks();
    expect(keys).toEqual([
      {
        kty: "EC",
        crv: "P-256",
        x: expect.any(String),
        y: expect.any(String),
        kid: store.records[0]?.kid,
        alg: "ES256",
        use: "sig",
      },
    ]);
    expect(JSON.stringify(keys)).not.toContain('"d"');
  });

  it("agrees with a second key ring on the same store", async () => {
    const store = memoryKeyStore();
    const a = createKeyRing({ store });
    const b = createKeyRing({ store });
    await a.ensureKey();
    expect((await b.signingKey()).kid).toBe((await a.signingKey()).kid);
    expect(await b.publicJwks()).toEqual(await a.publicJwks());
  });

  it("survives two processes creating their first key at once", async () => {
    const c = clock();
    const store = memoryKeyStore();
    const [a, b] = [createKeyRing({ store, now: c.now }), createKeyRing({ store, now: c.now })];
    await Promise.all([a.ensureKey(), b.ensureKey()]);
    // Each may briefly sign with its own key, but each verifies the other's at once...
    const ta = tokensFor(a, c.now);
    const tb = tokensFor(b, c.now);
    const fromA = await ta.issuer.issue("ua", "https://api.test");
    const fromB = await tb.issuer.issue("ub", "https://api.test");
    await expect(tb.verifier.verify(fromA.token)).resolves.toMatchObject({ sub: "ua" });
    await expect(ta.verifier.verify(fromB.token)).resolves.toMatchObject({ sub: "ub" });
    // ...and after a refresh both sign with the same one.
    c.t += 60_000;
    expect((await a.signingKey()).kid).toBe((await b.signingKey()).kid);
  });

  it("re-reads the store when its first key loses a race on the kid", async () => {
    const store = memoryKeyStore();
    const add = store.addSigningKey;
    store.addSigningKey = async (key) => {
      // Another process got there first.
      await add({ ...key, kid: "winner" });
      throw new StoreError("already_exists", "signing key taken");
    };
    const ring = createKeyRing({ store });
    await ring.ensureKey();
    expect((await ring.signingKey()).kid).toBe("winner");
  });

  it("signs with the new key after a rotation and still verifies older tokens", async () => {
    const c = clock();
    const store = memoryKeyStore();
    const ring = createKeyRing({ store, now: c.now });
    const { issuer, verifier } = tokensFor(ring, c.now);
    const old = await issuer.issue("u1", "https://api.test");
    c.t += 10 * 60_000;
    const kid = await ring.rotate();
    const fresh = await issuer.issue("u2", "https://api.test");
    expect(header(fresh.token).kid).toBe(kid);
    expect(header(old.token).kid).not.toBe(kid);
    await expect(verifier.verify(old.token)).resolves.toMatchObject({ sub: "u1" });
    await expect(verifier.verify(fresh.token)).resolves.toMatchObject({ sub: "u2" });
  });

  it("lets another process verify a key rotated elsewhere, reloading at most once per interval", async () => {
    const c = clock();
    const store = memoryKeyStore();
    const a = createKeyRing({ store, now: c.now });
    const b = createKeyRing({ store, now: c.now, reloadIntervalMs: 5000 });
    await b.ensureKey();
    const first = await a.rotate();
    const lists = store.lists;
    expect(await b.verificationKey(first)).toBeDefined();
    expect(await b.verificationKey("made-up")).toBeUndefined();
    expect(store.lists).toBe(lists + 1);
    // Within the interval an unknown kid costs no database read, even a real one.
    const second = await a.rotate();
    const after = store.lists;
    expect(await b.verificationKey(second)).toBeUndefined();
    expect(store.lists).toBe(after);
    c.t += 5000;
    expect(await b.verificationKey(second)).toBeDefined();
  });

  it("prunes a key only once its successor has outlived a token, and never the newest", async () => {
    const c = clock();
    const store = memoryKeyStore();
    const ring = createKeyRing({ store, now: c.now, tokenLifetimeMs: hour, pruneMarginMs: 0 });
    const { issuer, verifier } = tokensFor(ring, c.now);
    await ring.ensureKey();
    const k1 = store.records[0]?.kid;
    c.t += 10 * hour;
    const k2 = await ring.rotate();
    // k1 signed until a moment ago: its tokens are still live.
    expect(store.records.map((r) => r.kid)).toEqual([k1, k2]);
    c.t += 10 * hour - 60_000;
    const late = await issuer.issue("u", "https://api.test");
    c.t += 60_000;
    const k3 = await ring.rotate();
    expect(store.records.map((r) => r.kid)).toEqual([k2, k3]);
    c.t += 30 * 60_000;
    await expect(verifier.verify(late.token)).resolves.toMatchObject({ sub: "u" });
    // A lone old key is the newest: it stays.
    const lone = memoryKeyStore();
    const ring2 = createKeyRing({ store: lone, now: c.now });
    await ring2.ensureKey();
    c.t += 100 * hour;
    await ring2.rotate();
    expect(lone.records).toHaveLength(2);
  });
});

function header(token: string): { kid?: string } {
  const [h = ""] = token.split(".");
  return JSON.parse(Buffer.from(h, "base64url").toString());
}
