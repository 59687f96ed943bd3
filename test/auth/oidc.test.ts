import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OidcError, type OidcFailure } from "../../src/auth/oidc/oidc-error.js";
import { createOidcVerifier, type OidcVerifierOptions } from "../../src/auth/oidc/oidc-verifier.js";
import { parsePublicJwks } from "../../src/auth/oidc/public-jwks.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";

const started: OidcIssuer[] = [];
async function issuer(opts: Parameters<typeof startOidcIssuer>[0] = {}) {
  const i = await startOidcIssuer(opts);
  started.push(i);
  return i;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((i) => i.stop()));
});

// The verifier's clock; the issuer signs with real time, so tests only move it forward a little.
const c = { t: 0 };
beforeEach(() => {
  c.t = Date.now();
});
function verifier(over: Partial<OidcVerifierOptions> = {}) {
  return createOidcVerifier({ allowInsecureLoopback: true, now: () => c.t, ...over });
}

async function reason(p: Promise<unknown>): Promise<OidcFailure | "accepted"> {
  try {
    await p;
    return "accepted";
  } catch (err) {
    if (!(err instanceof OidcError)) throw err;
    return err.reason;
  }
}

describe("OIDC verifier", () => {
  it.each(["RS256", "ES256"] as const)("accepts a valid %s token", async (alg) => {
    const idp = await issuer({ alg });
    const token = await idp.issue({ sub: "repo:acme/app" });
    await expect(verifier().verify(token, { expectedIssuer: idp.url })).resolves.toMatchObject({
      iss: idp.url,
      sub: "repo:acme/app",
    });
    expect(idp.requests).toEqual({ discovery: 1, jwks: 1 });
  });

  it("refuses a token from another issuer than expected, without contacting it", async () => {
    const idp = await issuer();
    const token = await idp.issue();
    const v = verifier();
    expect(await reason(v.verify(token, { expectedIssuer: "https://other.test" }))).toBe(
      "bad_issuer",
    );
    expect(await reason(v.verify(token, { acceptIssuer: () => false }))).toBe("issuer_not_allowed");
    expect(idp.requests).toEqual({ discovery: 0, jwks: 0 });
  });

  it("contacts one host at most 10 times per cool-down, whatever issuer paths tokens name", async () => {
    const fetched: string[] = [];
    const fake: typeof fetch = async (url) => {
      fetched.push(String(url));
      return new Response("{}", { status: 404 });
    };
    const v = verifier({ fetch: fake });
    const key = (await generateKeyPair("ES256")).privateKey;
    for (let i = 0; i < 40; i++) {
      const token = await new SignJWT({ sub: "s" })
        .setProtectedHeader({ alg: "ES256", kid: "k" })
        .setIssuer(`https://tenants.example.com/t${i}`)
        .setExpirationTime("5m")
        .sign(key);
      expect(await reason(v.verify(token))).toBe("issuer_unavailable");
    }
    const discovery = fetched.filter((u) => u.endsWith("/.well-known/openid-configuration"));
    expect(discovery).toHaveLength(10);
    // The next cool-down period opens the host again.
    c.t += 30_000;
    const later = await new SignJWT({ sub: "s" })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setIssuer("https://tenants.example.com/t99")
      .setExpirationTime("5m")
      .sign(key);
    await reason(v.verify(later));
    expect(fetched.filter((u) => u.endsWith("/openid-configuration"))).toHaveLength(11);
  });

  it("refuses a token whose iss names an issuer that did not sign it", async () => {
    const [a, b] = [await issuer(), await issuer()];
    const token = await a.issue({ iss: b.url });
    expect(await reason(verifier().verify(token))).toBe("unknown_kid");
    const sameKid = await a.issue({ iss: b.url }, { kid: b.jwks().keys[0]?.kid as string });
    expect(await reason(verifier().verify(sameKid))).toBe("bad_signature");
  });

  it("refuses a discovery document that speaks for another issuer", async () => {
    const idp = await issuer({ discovery: { issuer: "https://evil.test" } });
    expect(await reason(verifier().verify(await idp.issue()))).toBe("bad_discovery");
  });

  it("refuses a plain-http jwks_uri off loopback", async () => {
    const idp = await issuer({ discovery: { jwks_uri: "http://example.com/jwks.json" } });
    expect(await reason(verifier().verify(await idp.issue()))).toBe("insecure_issuer");
  });

  it("refuses an http issuer unless insecure loopback is allowed", async () => {
    const idp = await issuer();
    const token = await idp.issue();
    const v = verifier({ allowInsecureLoopback: false });
    expect(await reason(v.verify(token))).toBe("insecure_issuer");
    expect(idp.requests).toEqual({ discovery: 0, jwks: 0 });
  });

  it.each<[string, (idp: OidcIssuer) => Promise<string>, OidcFailure]>([
    ["expired", (idp) => idp.issue({}, { expiresIn: -60 }), "expired"],
    [
      "not yet valid",
      (idp) => idp.issue({}, { notBefore: Date.now() / 1000 + 600 }),
      "not_yet_valid",
    ],
    ["without sub", (idp) => idp.issue({}, { omit: ["sub"] }), "bad_claims"],
    [
      "alg none",
      async (idp) => {
        const h = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
        const p = (await idp.issue()).split(".")[1];
        return `${h}.${p}.`;
      },
      "bad_algorithm",
    ],
    [
      "HS256 keyed with the issuer's public key",
      async (idp) =>
        new SignJWT({ iss: idp.url, sub: "x", exp: Math.floor(Date.now() / 1000) + 60 })
          .setProtectedHeader({ alg: "HS256", kid: idp.jwks().keys[0]?.kid as string })
          .sign(new TextEncoder().encode(JSON.stringify(idp.jwks().keys[0]))),
      "bad_algorithm",
    ],
    ["garbage", async () => "eyJ.garbage", "malformed"],
  ])("refuses a token that is %s", async (_name, make, want) => {
    const idp = await issuer();
    const token = await make(idp);
    const err = await verifier()
      .verify(token)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OidcError);
    expect((err as OidcError).reason).toBe(want);
    expect(String(err)).not.toContain(token);
  });

  it("refetches the JWKS for an unknown kid at most once per cool-down", async () => {
    const idp = await issuer();
    const v = verifier({ cooldownMs: 30_000 });
    await v.verify(await idp.issue());
    const unknown = await idp.issue({}, { kid: "nope" });
    // The first fetch was just now: within the cool-down, no refetch.
    expect(await reason(v.verify(unknown))).toBe("unknown_kid");
    expect(idp.requests.jwks).toBe(1);
    c.t += 30_000;
    expect(await reason(v.verify(unknown))).toBe("unknown_kid");
    expect(idp.requests.jwks).toBe(2);
    expect(await reason(v.verify(unknown))).toBe("unknown_kid");
    expect(await reason(v.verify(unknown))).toBe("unknown_kid");
    expect(idp.requests.jwks).toBe(2);
  });

  it("picks up a key rotated at the issuer", async () => {
    const idp = await issuer();
    const v = verifier();
    await v.verify(await idp.issue());
    await idp.rotateKeys({ keepPrevious: false });
    c.t += 30_000;
    await expect(v.verify(await idp.issue({ sub: "after" }))).resolves.toMatchObject({
      sub: "after",
    });
    expect(idp.requests).toEqual({ discovery: 2, jwks: 2 });
  });

  it("remembers a verified token only until it expires", async () => {
    const idp = await issuer();
    const v = verifier();
    const token = await idp.issue({ sub: "again" }, { expiresIn: 60 });
    for (let i = 0; i < 3; i++) {
      await expect(v.verify(token)).resolves.toMatchObject({ sub: "again" });
    }
    // Past exp and the 30 s tolerance: refused, though it verified a moment ago.
    c.t += 91_000;
    expect(await reason(v.verify(token))).toBe("expired");
    expect(await reason(v.verify(token))).toBe("expired");
  });

  it("forgets verified tokens once the issuer's keys change", async () => {
    const idp = await issuer();
    const v = verifier({ cacheTtlMs: 1_000, cooldownMs: 0 });
    const token = await idp.issue();
    await v.verify(token);
    // The key that signed it is withdrawn; the next use after the cache TTL refetches.
    await idp.rotateKeys({ keepPrevious: false });
    c.t += 2_000;
    expect(await reason(v.verify(token))).toBe("unknown_kid");
    expect(idp.requests.jwks).toBeGreaterThanOrEqual(2);
  });

  it("keeps verifying with cached keys while the issuer is down", async () => {
    const idp = await issuer();
    const warnings: string[] = [];
    const v = verifier({
      cacheTtlMs: 60_000,
      onStaleKeys: (iss, err) => warnings.push(`${iss} ${err.reason}`),
    });
    await v.verify(await idp.issue({}, { expiresIn: 3600 }));
    idp.down();
    c.t += 120_000; // the cache is stale: the verifier tries, fails, and keeps its keys
    await expect(v.verify(await idp.issue({}, { expiresIn: 3600 }))).resolves.toBeDefined();
    expect(idp.requests.discovery).toBe(2);
    expect(warnings).toEqual([`${idp.url} issuer_unavailable`]);
    // Further calls within the cool-down do not hammer the issuer.
    await v.verify(await idp.issue({}, { expiresIn: 3600 }));
    expect(idp.requests.discovery).toBe(2);
  });

  it("fails while the issuer is down and nothing is cached, without hammering it", async () => {
    const idp = await issuer();
    idp.down();
    const v = verifier();
    const token = await idp.issue();
    expect(await reason(v.verify(token))).toBe("issuer_unavailable");
    expect(await reason(v.verify(token))).toBe("issuer_unavailable");
    expect(idp.requests.discovery).toBe(1);
    idp.up();
    c.t += 30_000;
    expect(await reason(v.verify(token))).toBe("accepted");
  });

  it("gives up on a slow issuer and on an oversized document", async () => {
    const idp = await issuer({ discovery: { padding: "x".repeat(4096) } });
    const token = await idp.issue();
    expect(await reason(verifier({ maxResponseBytes: 1024 }).verify(token))).toBe("bad_discovery");
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(new Error("aborted")));
      });
    const slow = verifier({ fetch: hanging, timeoutMs: 50 });
    expect(await reason(slow.verify(token))).toBe("issuer_unavailable");
  });

  it("tries each candidate key for a token without kid", async () => {
    const idp = await issuer({ alg: "ES256" });
    await idp.rotateKeys(); // two ES256 keys published
    const v = verifier();
    await expect(
      v.verify(await idp.issue({ sub: "nokid" }, { omitKid: true })),
    ).resolves.toMatchObject({ sub: "nokid" });
    const stranger = await issuer({ alg: "ES256" });
    const forged = await stranger.issue({ iss: idp.url }, { omitKid: true });
    expect(await reason(v.verify(forged))).toBe("bad_signature");
  });

  it("shares one fetch between concurrent first calls", async () => {
    const idp = await issuer();
    const v = verifier();
    const tokens = await Promise.all([1, 2, 3, 4].map(() => idp.issue()));
    await Promise.all(tokens.map((t) => v.verify(t)));
    expect(idp.requests).toEqual({ discovery: 1, jwks: 1 });
  });
});

describe("static keys", () => {
  const later = () => new Date(c.t + 86_400_000);

  it("accepts a token signed by a listed key, then refuses it after expirationTime", async () => {
    const idp = await issuer();
    const token = await idp.issue({ sub: "ci" });
    const keys = JSON.stringify(idp.jwks());
    const v = verifier();
    const so = { issuer: idp.url, issuerKeysJson: keys, expirationTime: later() };
    await expect(v.verifyWithStaticKeys(token, so)).resolves.toMatchObject({ sub: "ci" });
    expect(idp.requests).toEqual({ discovery: 0, jwks: 0 });
    const expired = { ...so, expirationTime: new Date(c.t - 1) };
    expect(await reason(v.verifyWithStaticKeys(token, expired))).toBe("keys_expired");
    const other = { ...so, issuer: "https://other.test" };
    expect(await reason(v.verifyWithStaticKeys(token, other))).toBe("bad_issuer");
  });

  it.each<[string, () => Promise<string>]>([
    [
      "a private key",
      async () => {
        const { privateKey } = await generateKeyPair("ES256", { extractable: true });
        return JSON.stringify({ keys: [await exportJWK(privateKey)] });
      },
    ],
    ["a symmetric key", async () => JSON.stringify({ keys: [{ kty: "oct", k: "c2VjcmV0" }] })],
    ["no keys", async () => JSON.stringify({ keys: [] })],
    ["not JSON", async () => "{keys:"],
  ])("refuses a JWKS with %s", async (_name, make) => {
    const idp = await issuer();
    const json = await make();
    const so = { issuer: idp.url, issuerKeysJson: json, expirationTime: later() };
    expect(await reason(verifier().verifyWithStaticKeys(await idp.issue(), so))).toBe("bad_keys");
    expect(() => parsePublicJwks(json)).toThrow(OidcError);
    const detail = (() => {
      try {
        parsePublicJwks(json);
      } catch (err) {
        return (err as OidcError).detail ?? "";
      }
      return "";
    })();
    // The detail suits a field violation and never echoes key material.
    expect(detail).not.toBe("");
    expect(detail).not.toMatch(/c2VjcmV0|"d"/);
  });
});
