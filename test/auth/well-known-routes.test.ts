import Fastify from "fastify";
import { createLocalJWKSet, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { createKeyRing } from "../../src/auth/keyring.js";
import { createOidcVerifier } from "../../src/auth/oidc/oidc-verifier.js";
import { createTokenIssuer } from "../../src/auth/tokens.js";
import { wellKnownRoutes } from "../../src/auth/well-known-routes.js";
import { freePort } from "../helpers/test-server.js";
import { memoryKeyStore } from "./memory-key-store.js";

async function app(authUrl: string) {
  const keyRing = createKeyRing({ store: memoryKeyStore() });
  const a = Fastify();
  await a.register(wellKnownRoutes, { authUrl, keyRing });
  return { app: a, keyRing };
}

describe("well-known routes", () => {
  it("publish discovery and the JWKS that verifies our tokens", async () => {
    const { app: a, keyRing } = await app("https://auth.test");
    const disc = await a.inject("/.well-known/openid-configuration");
    expect(disc.statusCode).toBe(200);
    expect(disc.headers["cache-control"]).toMatch(/max-age=\d+/);
    expect(disc.json()).toMatchObject({
      issuer: "https://auth.test",
      jwks_uri: "https://auth.test/.well-known/jwks.json",
      id_token_signing_alg_values_supported: ["ES256"],
    });
    const jwks = await a.inject("/.well-known/jwks.json");
    expect(jwks.statusCode).toBe(200);
    expect(jwks.headers["cache-control"]).toMatch(/max-age=\d+/);
    const doc = jwks.json() as { keys: Record<string, unknown>[] };
    expect(doc.keys).toHaveLength(1);
    expect(Object.keys(doc.keys[0] ?? {}).sort()).toEqual(
      ["alg", "crv", "kid", "kty", "use", "x", "y"].sort(),
    );

    const { token } = await createTokenIssuer({ keyRing, issuer: "https://auth.test" }).issue(
      "uid",
      "https://api.test",
    );
    const { payload } = await jwtVerify(token, createLocalJWKSet(doc as never), {
      issuer: "https://auth.test",
    });
    expect(payload.sub).toBe("uid");

    await keyRing.rotate();
    const after = (await a.inject("/.well-known/jwks.json")).json() as { keys: unknown[] };
    expect(after.keys).toHaveLength(2);
  });

  it("serve under the auth URL's path", async () => {
    const { app: a } = await app("https://example.test/auth/");
    expect((await a.inject("/.well-known/openid-configuration")).statusCode).toBe(404);
    const disc = await a.inject("/auth/.well-known/openid-configuration");
    expect(disc.json()).toMatchObject({
      issuer: "https://example.test/auth",
      jwks_uri: "https://example.test/auth/.well-known/jwks.json",
    });
    expect((await a.inject("/auth/.well-known/jwks.json")).statusCode).toBe(200);
  });

  it("let an OIDC verifier check Gatehouse tokens like any other issuer's", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const { app: a, keyRing } = await app(url);
    await a.listen({ port, host: "127.0.0.1" });
    try {
      const { token } = await createTokenIssuer({ keyRing, issuer: url }).issue("me", "aud");
      const v = createOidcVerifier({ allowInsecureLoopback: true });
      expect((await v.verify(token, { expectedIssuer: url })).sub).toBe("me");
    } finally {
      await a.close();
    }
  });
});
