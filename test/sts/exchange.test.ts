import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { bootstrapOrganization } from "../../src/cli/bootstrap.js";
import type { ClaimMatchRecord, StaticKeysRecord } from "../../src/store/iam-store.js";
import { newChildUid } from "../../src/uid.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { type ExchangeResult, stsClients } from "../helpers/sts-clients.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// Workloads trade OIDC tokens from real (loopback) issuers for Gatehouse tokens, over every
// protocol, against a running server whose clock (shared by the issuers) the tests move.

const registry = "https://registry.test";
const clock = { offset: 0 };
const now = () => Date.now() + clock.offset;
const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;

let ts: TestServer;
let idp: OidcIssuer;
let orgUid: string;
let ownerUid: string;
let clients: ReturnType<typeof stsClients>;
// Cases beyond the protocols go over Connect; the per-protocol suite covers REST.
const rest = () => clients.Connect!;

function claimMatch(over: Partial<ClaimMatchRecord> = {}): ClaimMatchRecord {
  return {
    issuer: idp.url,
    issuerPattern: "",
    subject: "repo:acme/app:ref:refs/heads/main",
    subjectPattern: "",
    audience: "",
    audiencePattern: "",
    claims: {},
    claimPatterns: {},
    ...over,
  };
}

/** An identity in the organization, bound to viewer there so its tokens can read it. */
async function identity(
  how: { claimMatch: ClaimMatchRecord } | { staticKeys: StaticKeysRecord },
): Promise<string> {
  const uid = newChildUid(orgUid);
  await ts.store.createIdentity({
    uid,
    groupUid: orgUid,
    name: "workload",
    description: "",
    ...how,
    now: now(),
  });
  await ts.store.createRoleBinding({
    uid: newChildUid(orgUid),
    groupUid: orgUid,
    identityUid: uid,
    roleUid: viewer,
    now: now(),
  });
  return uid;
}

const workloadToken = (claims: Record<string, unknown> = {}, i: OidcIssuer = idp) =>
  i.issue({ sub: "repo:acme/app:ref:refs/heads/main", aud: ts.config.baseUrl, ...claims });

/** Read the organization with `token` over Connect: "OK" or the error code. */
async function readOrg(token: string): Promise<"OK" | Code> {
  const groups = createClient(
    GroupsService,
    createConnectTransport({ baseUrl: ts.url, httpVersion: "1.1" }),
  );
  try {
    await groups.getGroup({ uid: orgUid }, { headers: { authorization: `Bearer ${token}` } });
    return "OK";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

function ok(r: ExchangeResult): { token: string; expiry: Date } {
  if (!r.ok) throw new Error(`exchange refused: ${r.code} ${r.message}`);
  return r;
}

beforeAll(async () => {
  idp = await startOidcIssuer({ now });
  ts = await startTestServer(
    {
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_REGISTRY_AUDIENCE: registry,
    },
    { now },
  );
  clients = stsClients(ts.url);
  ({ orgUid, identityUid: ownerUid } = await bootstrapOrganization(ts.store, "acme", now()));
});
afterAll(async () => {
  await ts?.close();
  await idp?.stop();
});

describe.each(["REST GET", "REST POST JSON", "REST POST form", "Connect", "gRPC-Web", "gRPC"])(
  "exchange over %s",
  (protocol) => {
    const exchange = (bearer: string | undefined, req: { aud: string; identity?: string }) =>
      clients[protocol]!(bearer, req);

    it("gives a matching workload a one-hour token that works against the API", async () => {
      const uid = await identity({ claimMatch: claimMatch() });
      const token = await workloadToken();
      const before = now();
      const res = ok(await exchange(token, { aud: ts.config.baseUrl, identity: uid }));
      const after = now();
      expect(decodeJwt(res.token)).toMatchObject({
        iss: ts.config.authUrl,
        sub: uid,
        aud: ts.config.baseUrl,
      });
      // An hour from the server's clock during the call (the token's exp: whole seconds).
      expect(res.expiry.getTime()).toBeGreaterThanOrEqual(
        Math.floor((before + 3600_000) / 1000) * 1000,
      );
      expect(res.expiry.getTime()).toBeLessThanOrEqual(after + 3600_000);
      expect(await readOrg(res.token)).toBe("OK");
      // The exchange is in the audit trail, by and about the workload, without its token.
      const events = createClient(
        EventsService,
        createConnectTransport({ baseUrl: ts.url, httpVersion: "1.1" }),
      );
      const trail = await events.listEvents(
        { uidp: { childrenOf: uid, descendantsOf: "" } },
        { headers: { authorization: `Bearer ${await ts.tokenFor(ownerUid)}` } },
      );
      expect(trail.events.map((e) => [e.type, e.data?.actor])).toMatchObject([
        ["dev.gatehouse.sts.security_token.exchanged.v1", { uid }],
      ]);
      expect(JSON.stringify(trail.events.map((e) => e.data))).not.toContain(
        res.token.split(".")[2],
      );
    });

    it("answers a failed match and an unknown identity identically", async () => {
      const uid = await identity({ claimMatch: claimMatch() });
      const unknown = newChildUid(orgUid);
      const aud = ts.config.baseUrl;
      const results = [
        await exchange(await workloadToken({ sub: "repo:acme/other" }), { aud, identity: uid }),
        await exchange(await workloadToken(), { aud, identity: unknown }),
        await exchange(await workloadToken({ sub: "repo:acme/other" }), { aud, identity: unknown }),
      ];
      for (const r of results) {
        expect(r).toEqual(results[0]);
        expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated });
      }
      if (protocol.startsWith("REST")) {
        expect(results[0]).toMatchObject({
          status: 401,
          wwwAuthenticate: expect.stringMatching(/^Bearer/),
        });
      }
    });

    it("refuses an audience other than the base URL and the registry audience", async () => {
      const uid = await identity({ claimMatch: claimMatch() });
      const r = await exchange(await workloadToken(), { aud: "https://evil.test", identity: uid });
      expect(r).toMatchObject({ ok: false, code: Code.InvalidArgument });
    });
  },
);

describe("claim matching", () => {
  it.each<[string, Partial<ClaimMatchRecord>, Record<string, unknown>, boolean]>([
    ["exact subject", {}, {}, true],
    ["another subject", {}, { sub: "repo:acme/app:ref:refs/heads/dev" }, false],
    [
      "a subject pattern",
      { subject: "", subjectPattern: "repo:acme/[a-z]+:ref:refs/heads/.+" },
      {},
      true,
    ],
    [
      "a subject pattern matching only part of the value",
      { subject: "", subjectPattern: "repo:acme/app" },
      {},
      false,
    ],
    // PINNED: the test issuer's own origin, written literally (dots escaped).
    ["an issuer pattern", { issuer: "", issuerPattern: "PINNED" }, {}, true],
    [
      "an issuer pattern that pins no host is never contacted",
      { issuer: "", issuerPattern: "http://127\\.0\\.0\\.1:\\d+" },
      {},
      false,
    ],
    [
      "an exact claim",
      { claims: { repository_owner: "acme" } },
      { repository_owner: "acme" },
      true,
    ],
    [
      "a wrong exact claim",
      { claims: { repository_owner: "acme" } },
      { repository_owner: "evil" },
      false,
    ],
    ["a missing claim", { claims: { repository_owner: "acme" } }, {}, false],
    [
      "a claim pattern",
      { claimPatterns: { workflow: "deploy-.*" } },
      { workflow: "deploy-prod" },
      true,
    ],
    [
      "a failing claim pattern",
      { claimPatterns: { workflow: "deploy-.*" } },
      { workflow: "x-deploy-prod" },
      false,
    ],
    ["the default audience (the base URL)", {}, { aud: "https://elsewhere.test" }, false],
    ["an audience among several", {}, { aud: ["https://elsewhere.test", "BASE"] }, true],
    ["a configured audience", { audience: "sts.acme" }, { aud: "sts.acme" }, true],
    ["a configured audience, not the base URL", { audience: "sts.acme" }, {}, false],
    ["an audience pattern", { audiencePattern: "sts\\.[a-z]+" }, { aud: "sts.acme" }, true],
  ])("%s", async (_name, given, claims, accepted) => {
    const rules =
      given.issuerPattern === "PINNED"
        ? { ...given, issuerPattern: idp.url.replaceAll(".", "\\.") }
        : given;
    const uid = await identity({ claimMatch: claimMatch(rules) });
    const withBase = Array.isArray(claims.aud)
      ? { ...claims, aud: claims.aud.map((a) => (a === "BASE" ? ts.config.baseUrl : a)) }
      : claims;
    const r = await rest()(await workloadToken(withBase), {
      aud: ts.config.baseUrl,
      identity: uid,
    });
    expect(r.ok).toBe(accepted);
  });

  it("refuses an array sub, even one whose elements include the identity's subject", async () => {
    const uid = await identity({ claimMatch: claimMatch() });
    const r = await rest()(
      await workloadToken({ sub: ["someone-else", "repo:acme/app:ref:refs/heads/main"] }),
      { aud: ts.config.baseUrl, identity: uid },
    );
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated });
  });

  it("issues a registry-audience token that the API itself does not accept", async () => {
    const uid = await identity({ claimMatch: claimMatch() });
    const res = ok(await rest()(await workloadToken(), { aud: registry, identity: uid }));
    expect(decodeJwt(res.token).aud).toBe(registry);
    expect(await readOrg(res.token)).toBe(Code.Unauthenticated);
    // The setting as a URL (its older form) also names the registry by its service name.
    const host = new URL(registry).host;
    const byHost = ok(await rest()(await workloadToken(), { aud: host, identity: uid }));
    expect(decodeJwt(byHost.token).aud).toBe(host);
  });

  it("refuses expired tokens and tokens that name the identity's issuer but another signer", async () => {
    const uid = await identity({ claimMatch: claimMatch() });
    const aud = ts.config.baseUrl;
    expect(
      (
        await rest()(
          await idp.issue({ sub: "repo:acme/app:ref:refs/heads/main", aud }, { expiresIn: -120 }),
          { aud, identity: uid },
        )
      ).ok,
    ).toBe(false);
    const other = await startOidcIssuer({ now });
    try {
      const forged = await other.issue({
        iss: idp.url,
        sub: "repo:acme/app:ref:refs/heads/main",
        aud,
      });
      expect((await rest()(forged, { aud, identity: uid })).ok).toBe(false);
      expect(other.requests).toEqual({ discovery: 0, jwks: 0 });
    } finally {
      await other.stop();
    }
  });

  it("moves lastSeenTime on success only", async () => {
    const uid = await identity({ claimMatch: claimMatch() });
    const before = (await ts.store.getIdentity(uid))!.lastSeenTime;
    clock.offset += 1000;
    await rest()(await workloadToken({ sub: "nope" }), { aud: ts.config.baseUrl, identity: uid });
    expect((await ts.store.getIdentity(uid))!.lastSeenTime).toBe(before);
    ok(await rest()(await workloadToken(), { aud: ts.config.baseUrl, identity: uid }));
    const after = (await ts.store.getIdentity(uid))!.lastSeenTime;
    expect(after).toBeGreaterThan(before);
  });
});

describe("static keys", () => {
  async function staticIdentity(expirationTime: number) {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "ci-1", alg: "ES256", use: "sig" };
    const uid = await identity({
      staticKeys: {
        issuer: "https://ci.internal.test",
        subject: "pipeline-7",
        issuerKeys: JSON.stringify({ keys: [jwk] }),
        expirationTime,
      },
    });
    const sign = (claims: Record<string, unknown> = {}) =>
      new SignJWT({
        iss: "https://ci.internal.test",
        sub: "pipeline-7",
        aud: ts.config.baseUrl,
        ...claims,
      })
        .setProtectedHeader({ alg: "ES256", kid: "ci-1" })
        .setIssuedAt(Math.floor(now() / 1000))
        .setExpirationTime(Math.floor(now() / 1000) + 600)
        .sign(privateKey);
    return { uid, sign };
  }

  it("accepts tokens signed by the identity's keys until they expire", async () => {
    const { uid, sign } = await staticIdentity(now() + 3600_000);
    const res = ok(await rest()(await sign(), { aud: ts.config.baseUrl, identity: uid }));
    expect(await readOrg(res.token)).toBe("OK");
    expect(
      (await rest()(await sign({ sub: "pipeline-8" }), { aud: ts.config.baseUrl, identity: uid }))
        .ok,
    ).toBe(false);
    expect(
      (
        await rest()(await sign({ iss: "https://other.test" }), {
          aud: ts.config.baseUrl,
          identity: uid,
        })
      ).ok,
    ).toBe(false);
  });

  it("refuses them once the keys have expired", async () => {
    const { uid, sign } = await staticIdentity(now() - 1000);
    const r = await rest()(await sign(), { aud: ts.config.baseUrl, identity: uid });
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated });
  });
});

describe("the issuer's keys", () => {
  it("follows a key rotation at the issuer, at most once per cool-down", async () => {
    const own = await startOidcIssuer({ now });
    try {
      const uid = await identity({ claimMatch: claimMatch({ issuer: own.url }) });
      const aud = ts.config.baseUrl;
      ok(await rest()(await workloadToken({}, own), { aud, identity: uid }));
      await own.rotateKeys({ keepPrevious: false });
      const fresh = await workloadToken({}, own);
      // Within the cool-down the issuer is not asked again.
      expect((await rest()(fresh, { aud, identity: uid })).ok).toBe(false);
      const fetched = own.requests.jwks;
      clock.offset += 31_000;
      ok(await rest()(fresh, { aud, identity: uid }));
      expect(own.requests.jwks).toBe(fetched + 1);
    } finally {
      await own.stop();
    }
  });

  it("keeps using cached keys while the issuer is down", async () => {
    const own = await startOidcIssuer({ now });
    try {
      const uid = await identity({ claimMatch: claimMatch({ issuer: own.url }) });
      const aud = ts.config.baseUrl;
      ok(await rest()(await workloadToken({}, own), { aud, identity: uid }));
      own.down();
      clock.offset += 11 * 60_000; // past the cache's lifetime: a refresh is due and fails
      ok(await rest()(await workloadToken({}, own), { aud, identity: uid }));
      await own.rotateKeys({ keepPrevious: false });
      expect((await rest()(await workloadToken({}, own), { aud, identity: uid })).ok).toBe(false);
    } finally {
      await own.stop();
    }
  });

  it("never fetches from an issuer the identity does not name", async () => {
    const stranger = await startOidcIssuer({ now });
    try {
      const uid = await identity({ claimMatch: claimMatch() });
      const token = await stranger.issue({
        sub: "repo:acme/app:ref:refs/heads/main",
        aud: ts.config.baseUrl,
      });
      expect((await rest()(token, { aud: ts.config.baseUrl, identity: uid })).ok).toBe(false);
      expect(stranger.requests).toEqual({ discovery: 0, jwks: 0 });
    } finally {
      await stranger.stop();
    }
  });
});

describe("malformed exchanges", () => {
  it("requires a bearer token and an audience", async () => {
    const uid = await identity({ claimMatch: claimMatch() });
    const get = clients["REST GET"]!;
    expect(await get(undefined, { aud: ts.config.baseUrl, identity: uid })).toMatchObject({
      ok: false,
      status: 401,
      wwwAuthenticate: expect.stringMatching(/^Bearer/),
    });
    expect(await get(await workloadToken(), { aud: "", identity: uid })).toMatchObject({
      ok: false,
      status: 400,
      code: Code.InvalidArgument,
    });
    expect(await rest()(undefined, { aud: ts.config.baseUrl, identity: uid })).toMatchObject({
      ok: false,
      code: Code.Unauthenticated,
    });
  });
});
