import { exportJWK, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { createKeyRing, type KeyRing } from "../../src/auth/keyring.js";
import {
  createTokenIssuer,
  createTokenVerifier,
  TokenError,
  type TokenFailure,
} from "../../src/auth/tokens.js";
import { memoryKeyStore } from "./memory-key-store.js";

const iss = "https://auth.test";
const aud = "https://api.test";
const c = { t: Date.UTC(2026, 0, 1) };
const now = () => c.t;

let ring: KeyRing;
let kid: string;
let good: string;

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const nowSec = () => Math.floor(now() / 1000);
const claims = (over: JWTPayload = {}): JWTPayload => ({
  iss,
  sub: "uid-1",
  aud,
  iat: nowSec(),
  exp: nowSec() + 3600,
  ...over,
});

/** Sign arbitrary claims with the ring's real key: checks beyond the signature. */
async function ours(payload: JWTPayload, header: Record<string, unknown> = {}) {
  const key = await ring.signingKey();
  return new SignJWT(payload)
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.kid, ...header })
    .sign(key.key);
}

beforeAll(async () => {
  ring = createKeyRing({ store: memoryKeyStore(), now });
  kid = (await ring.signingKey()).kid;
  good = (await createTokenIssuer({ keyRing: ring, issuer: iss, now }).issue("uid-1", aud)).token;
});

function verifier(over: { cacheSize?: number } = {}) {
  let lookups = 0;
  const keyRing: KeyRing = {
    ...ring,
    verificationKey: (k) => {
      lookups++;
      return ring.verificationKey(k);
    },
  };
  const v = createTokenVerifier({ keyRing, issuer: iss, audience: aud, now, ...over });
  return { v, lookups: () => lookups };
}

describe("token issuer and verifier", () => {
  it("issues a token the verifier accepts", async () => {
    const issuer = createTokenIssuer({ keyRing: ring, issuer: iss, now });
    const { token, expiry } = await issuer.issue("uid-2", aud, { email: "a@b.test" });
    expect(expiry.getTime()).toBe(nowSec() * 1000 + 3_600_000);
    const [h = "", p = ""] = token.split(".");
    expect(JSON.parse(Buffer.from(h, "base64url").toString())).toEqual({
      alg: "ES256",
      kid,
      typ: "JWT",
    });
    expect(JSON.parse(Buffer.from(p, "base64url").toString())).toMatchObject({
      iss,
      sub: "uid-2",
      aud,
      email: "a@b.test",
      jti: expect.any(String),
    });
    await expect(verifier().v.verify(token)).resolves.toEqual({
      sub: "uid-2",
      email: "a@b.test",
      exp: nowSec() + 3600,
      iat: nowSec(),
    });
  });

  const attacks: Array<[string, () => Promise<string>, TokenFailure]> = [
    [
      "alg none",
      async () => `${b64({ alg: "none", typ: "JWT", kid })}.${b64(claims())}.`,
      "bad_algorithm",
    ],
    [
      "HS256 keyed with our public JWK",
      async () => {
        const jwk = (await ring.publicJwks()).keys[0];
        return new SignJWT(claims())
          .setProtectedHeader({ alg: "HS256", typ: "JWT", kid })
          .sign(new TextEncoder().encode(JSON.stringify(jwk)));
      },
      "bad_algorithm",
    ],
    [
      "HS256 keyed with our public PEM",
      async () => {
        const key = await ring.verificationKey(kid);
        const pem = await exportSPKI(key!);
        return new SignJWT(claims())
          .setProtectedHeader({ alg: "HS256", typ: "JWT", kid })
          .sign(new TextEncoder().encode(pem));
      },
      "bad_algorithm",
    ],
    [
      "RS256 with our kid",
      async () => {
        const rsa = await generateKeyPair("RS256");
        return new SignJWT(claims())
          .setProtectedHeader({ alg: "RS256", typ: "JWT", kid })
          .sign(rsa.privateKey);
      },
      "bad_algorithm",
    ],
    ["unknown kid", () => ours(claims(), { kid: "not-a-kid" }), "unknown_kid"],
    ["missing kid", () => ours(claims(), { kid: undefined }), "missing_kid"],
    ["expired", () => ours(claims({ exp: nowSec() - 31 })), "expired"],
    ["nbf in the future", () => ours(claims({ nbf: nowSec() + 120 })), "not_yet_valid"],
    ["wrong aud", () => ours(claims({ aud: "https://other.test" })), "bad_audience"],
    ["wrong iss", () => ours(claims({ iss: "https://evil.test" })), "bad_issuer"],
    ["no sub", () => ours((({ sub: _, ...rest }) => rest)(claims())), "bad_claims"],
    ["wrong typ", () => ours(claims(), { typ: "at+jwt" }), "bad_claims"],
    [
      "altered payload",
      async () => {
        const [hh, , sig] = good.split(".");
        return `${hh}.${b64(claims({ sub: "uid-admin" }))}.${sig}`;
      },
      "bad_signature",
    ],
    [
      "ECDSA signature of zeros",
      async () => {
        const [hh, pp] = good.split(".");
        return `${hh}.${pp}.${Buffer.alloc(64).toString("base64url")}`;
      },
      "bad_signature",
    ],
    [
      "another key ring's key under our kid",
      async () => {
        const other = createKeyRing({ store: memoryKeyStore(), now });
        const key = await other.signingKey();
        return new SignJWT(claims())
          .setProtectedHeader({ alg: "ES256", typ: "JWT", kid })
          .sign(key.key);
      },
      "bad_signature",
    ],
    ["garbage", async () => "not.a.jwt", "malformed"],
    ["oversized", async () => `${good}${"A".repeat(10_000)}`, "malformed"],
  ];

  it.each(attacks)("rejects %s", async (_name, make, reason) => {
    const token = await make();
    const err = await verifier()
      .v.verify(token)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(TokenError);
    expect((err as TokenError).reason).toBe(reason);
    // Neither the token nor any sizeable piece of it is echoed.
    for (const part of [token, ...token.split(".")].filter((x) => x.length > 8)) {
      expect(String(err)).not.toContain(part);
    }
  });

  it("answers from the cache but still refuses a cached token once it expires", async () => {
    const { v, lookups } = verifier();
    await v.verify(good);
    await v.verify(good);
    expect(lookups()).toBe(1);
    const start = c.t;
    try {
      c.t += 3_600_000 + 30_000; // exp plus the clock tolerance
      await expect(v.verify(good)).rejects.toMatchObject({ reason: "expired" });
      expect(lookups()).toBe(1);
    } finally {
      c.t = start;
    }
  });

  it("evicts an entry not used since it was last passed over when the cache is full", async () => {
    const { v, lookups } = verifier({ cacheSize: 2 });
    const issuer = createTokenIssuer({ keyRing: ring, issuer: iss, now });
    const [t1, t2, t3] = await Promise.all(["a", "b", "c"].map((s) => issuer.issue(s, aud)));
    await v.verify(t1!.token);
    await v.verify(t2!.token);
    await v.verify(t1!.token); // t1 is now the most recent
    await v.verify(t3!.token); // evicts t2
    expect(lookups()).toBe(3);
    await v.verify(t1!.token);
    expect(lookups()).toBe(3);
    await v.verify(t2!.token);
    expect(lookups()).toBe(4);
  });

  it("caches nothing with cacheSize 0", async () => {
    const { v, lookups } = verifier({ cacheSize: 0 });
    await v.verify(good);
    await v.verify(good);
    expect(lookups()).toBe(2);
  });

  it("does not confuse a store failure with a bad token", async () => {
    const keyRing: KeyRing = {
      ...ring,
      verificationKey: () => Promise.reject(new Error("database is down")),
    };
    const v = createTokenVerifier({ keyRing, issuer: iss, audience: aud, now });
    await expect(v.verify(good)).rejects.toThrow("database is down");
  });

  it("publishes a JWK that is exportable as the verifier's key", async () => {
    const key = await ring.verificationKey(kid);
    const { kid: _k, alg: _a, use: _u, ...pub } = (await ring.publicJwks()).keys[0]!;
    expect(await exportJWK(key!)).toMatchObject(pub);
  });
});
