import { createClient, createRouterTransport } from "@connectrpc/connect";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";
import { createKeyRing } from "../../src/auth/keyring.js";
import { createOidcVerifier } from "../../src/auth/oidc/oidc-verifier.js";
import { createTokenIssuer, createTokenVerifier } from "../../src/auth/tokens.js";
import { createUnrecordedChanges } from "../../src/events/audit-interceptor.js";
import { createSecurityTokenService, personUid } from "../../src/services/sts/exchange.js";
import type { IdentityRecord, PersonLogin } from "../../src/store/iam-store.js";
import { type Store, StoreError } from "../../src/store/store.js";
import { memoryKeyStore } from "../auth/memory-key-store.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";

// Direct tests of the handler with an in-memory identity store; the protocol suites
// (exchange.test.ts, login.test.ts) run the same code through a real server.

const baseUrl = "https://api.test";
const authUrl = "https://auth.test";
const registry = "https://registry.test";
const org = "a".repeat(40);
const wl = `${org}/0123456789abcdef`;

let idp: OidcIssuer;
let users: OidcIssuer;
const identities = new Map<string, IdentityRecord>();
const refusals: string[] = [];
const t = { now: Date.now() };

const store = {
  async getIdentity(uid: string) {
    return identities.get(uid);
  },
  async touchIdentity(uid: string, time: number) {
    const i = identities.get(uid);
    if (!i) throw new StoreError("not_found", uid);
    i.lastSeenTime = time;
  },
  async upsertPerson(p: PersonLogin) {
    const old = identities.get(p.uid);
    const rec: IdentityRecord = {
      uid: p.uid,
      groupUid: "",
      name: p.name,
      description: "",
      email: p.email,
      lastSeenTime: p.now,
      createTime: old?.createTime ?? p.now,
      updateTime: p.now,
    };
    identities.set(p.uid, rec);
    return rec;
  },
};

const keyRing = createKeyRing({ store: memoryKeyStore() });
const verifier = createTokenVerifier({ keyRing, issuer: authUrl, audience: [baseUrl, registry] });

function client() {
  const oidc = createOidcVerifier({ allowInsecureLoopback: true, cooldownMs: 0, now: () => t.now });
  const impl = createSecurityTokenService({
    store,
    tokens: createTokenIssuer({ keyRing, issuer: authUrl }),
    oidc,
    // These identities hold nothing anywhere: no narrowing of theirs is ever allowed.
    authorizer: { listScope: async () => [] },
    config: {
      baseUrl,
      registryAudience: registry,
      registryService: new URL(registry).host,
      trustedUserIssuers: [users.url],
      loginRequireVerifiedEmail: false,
    },
    now: () => t.now,
    onRefused: (f) => refusals.push(f.reason),
  });
  return createClient(
    SecurityTokenService,
    createRouterTransport(({ service }) => service(SecurityTokenService, impl), {
      // As a server hands each mutating call its store (here with no audit trail).
      router: { interceptors: [createUnrecordedChanges(store as unknown as Store)] },
    }),
  );
}

function identity(uid: string, over: Partial<IdentityRecord>): IdentityRecord {
  const rec: IdentityRecord = {
    uid,
    groupUid: org,
    name: "wl",
    description: "",
    email: "",
    lastSeenTime: 1,
    createTime: 1,
    updateTime: 1,
    ...over,
  };
  identities.set(uid, rec);
  return rec;
}

const claimMatch = (over: Partial<NonNullable<IdentityRecord["claimMatch"]>> = {}) => ({
  issuer: idp.url,
  issuerPattern: "",
  subject: "repo:acme/app",
  subjectPattern: "",
  audience: "",
  audiencePattern: "",
  claims: {},
  claimPatterns: {},
  ...over,
});

async function exchange(token: string, req: { aud?: string; identity?: string }) {
  return client().exchange(
    { aud: req.aud ?? baseUrl, identity: req.identity ?? "" },
    { headers: { authorization: `Bearer ${token}` } },
  );
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (err) {
    return String((err as Error).message);
  }
}

beforeAll(async () => {
  idp = await startOidcIssuer();
  users = await startOidcIssuer({ alg: "ES256" });
});
afterAll(async () => {
  await idp.stop();
  await users.stop();
});
beforeEach(() => {
  identities.clear();
  refusals.length = 0;
  t.now = Date.now();
});

describe("STS exchange handler", () => {
  it("issues a Gatehouse token for a matching workload token and moves lastSeenTime", async () => {
    identity(wl, { claimMatch: claimMatch() });
    const token = await idp.issue({ sub: "repo:acme/app", aud: baseUrl });
    const res = await exchange(token, { identity: wl, aud: registry });
    const v = await verifier.verify(res.token);
    expect(v.sub).toBe(wl);
    expect(res.expiry && Number(res.expiry.seconds)).toBe(v.exp);
    expect(identities.get(wl)?.lastSeenTime).toBe(t.now);
  });

  it("gives the same error for no match, a bad token and an unknown identity", async () => {
    identity(wl, { claimMatch: claimMatch() });
    const other = `${org}/fedcba9876543210`;
    const good = await idp.issue({ sub: "repo:acme/app", aud: baseUrl });
    const cases: Array<[string, string]> = [
      [await idp.issue({ sub: "repo:acme/other", aud: baseUrl }), wl],
      [await idp.issue({ sub: "repo:acme/app", aud: "elsewhere" }), wl],
      [`${good.slice(0, -4)}AAAA`, wl],
      [good, other],
    ];
    const messages: string[] = [];
    for (const [token, uid] of cases) messages.push(await code(exchange(token, { identity: uid })));
    expect(new Set(messages).size).toBe(1);
    expect(messages[0]).toMatch(/unauthenticated/);
    expect(refusals.sort()).toEqual([
      "bad_signature",
      "claims_mismatch",
      "claims_mismatch",
      "unknown_identity",
    ]);
    expect(identities.get(wl)?.lastSeenTime).toBe(1);
  });

  it("never contacts an issuer the identity does not name", async () => {
    const stranger = await startOidcIssuer();
    try {
      identity(wl, { claimMatch: claimMatch() });
      const token = await stranger.issue({ sub: "repo:acme/app", aud: baseUrl });
      expect(await code(exchange(token, { identity: wl }))).toMatch(/unauthenticated/);
      expect(stranger.requests).toEqual({ discovery: 0, jwks: 0 });
      expect(refusals).toEqual(["issuer_not_allowed"]);
    } finally {
      await stranger.stop();
    }
  });

  it("refuses audiences other than the base URL and the registry audience", async () => {
    identity(wl, { claimMatch: claimMatch() });
    const token = await idp.issue({ sub: "repo:acme/app", aud: baseUrl });
    expect(await code(exchange(token, { identity: wl, aud: "https://evil.test" }))).toMatch(
      /invalid_argument.*aud/,
    );
    expect(await code(exchange(token, { identity: wl, aud: "" }))).toMatch(/invalid_argument/);
  });

  it("verifies static keys until their expiration time", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1" };
    identity(wl, {
      staticKeys: {
        issuer: "https://unreachable.test",
        subject: "ci",
        issuerKeys: JSON.stringify({ keys: [jwk] }),
        expirationTime: t.now + 60_000,
      },
    });
    const sign = (sub: string) =>
      new SignJWT({ iss: "https://unreachable.test", sub, aud: baseUrl })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey);
    expect(
      (await verifier.verify((await exchange(await sign("ci"), { identity: wl })).token)).sub,
    ).toBe(wl);
    expect(await code(exchange(await sign("other"), { identity: wl }))).toMatch(/unauthenticated/);
    t.now += 120_000;
    expect(await code(exchange(await sign("ci"), { identity: wl }))).toMatch(/unauthenticated/);
    expect(refusals).toEqual(["claims_mismatch", "keys_expired"]);
  });

  it("does not let a person's root identity be assumed by naming it", async () => {
    const uid = personUid(users.url, "alice");
    identity(uid, { groupUid: "" });
    const token = await users.issue({ sub: "alice", aud: baseUrl });
    expect(await code(exchange(token, { identity: uid }))).toMatch(/unauthenticated/);
  });

  it("logs a person in with a stable uid and only a verified email", async () => {
    const first = await exchange(
      await users.issue({ sub: "alice", aud: baseUrl, email: "a@x.test", email_verified: true }),
      {},
    );
    const v = await verifier.verify(first.token);
    expect(v).toMatchObject({ sub: personUid(users.url, "alice"), email: "a@x.test" });
    expect(v.sub).toMatch(/^[0-9a-f]{40}$/);
    const second = await exchange(
      await users.issue({ sub: "alice", aud: baseUrl, email: "b@x.test", email_verified: false }),
      {},
    );
    const v2 = await verifier.verify(second.token);
    expect(v2.sub).toBe(v.sub);
    expect(v2.email).toBeUndefined();
    expect(identities.get(v.sub)?.email).toBe("");
  });

  it("refuses a login from an untrusted issuer or for another audience", async () => {
    const before = idp.requests.discovery;
    expect(await code(exchange(await idp.issue({ sub: "alice", aud: baseUrl }), {}))).toMatch(
      /unauthenticated/,
    );
    expect(await code(exchange(await users.issue({ sub: "alice", aud: "app" }), {}))).toMatch(
      /unauthenticated/,
    );
    expect(idp.requests.discovery).toBe(before);
    expect(refusals).toEqual(["login_issuer_not_allowed", "login_bad_audience"]);
    expect(identities.size).toBe(0);
  });

  it("requires a bearer token", async () => {
    identity(wl, { claimMatch: claimMatch() });
    const res = client().exchange({ aud: baseUrl, identity: wl });
    expect(await code(res)).toMatch(/unauthenticated/);
  });
});

describe("refusals that must not be told apart by their timing", () => {
  it("checks a signature for an unknown identity as for a known one, and caches alike", async () => {
    const known = `${org}/1111111111111111`;
    identity(known, { claimMatch: claimMatch({ subject: "someone-else" }) });
    const unknown = `${org}/2222222222222222`;
    const c = client();
    const call = (token: string, uid: string) =>
      code(
        c.exchange(
          { aud: baseUrl, identity: uid },
          { headers: { authorization: `Bearer ${token}` } },
        ),
      );
    // The issuer's keys are fetched once, outside the counts.
    await call(await idp.issue({ sub: "warm-up", aud: baseUrl }), known);
    const verify = vi.spyOn(globalThis.crypto.subtle, "verify");
    try {
      const signatures = async (token: string, uid: string) => {
        verify.mockClear();
        expect(await call(token, uid)).not.toBe("OK");
        return verify.mock.calls.length;
      };
      const a = await idp.issue({ sub: "repo:acme/app", aud: baseUrl });
      const b = await idp.issue({ sub: "repo:acme/app", aud: baseUrl, jti: "b" });
      expect(await signatures(a, known)).toBe(1);
      expect(await signatures(b, unknown)).toBe(1);
      // The same token again: remembered either way.
      expect(await signatures(a, known)).toBe(0);
      expect(await signatures(b, unknown)).toBe(0);
    } finally {
      verify.mockRestore();
    }
  });
});
