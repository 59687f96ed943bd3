import { createHash, randomBytes } from "node:crypto";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { personUid, providerPersonUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { cliAuthorizeUrl, cliRedirect, redeemCode } from "../helpers/cli-sign-in.js";
import {
  type HostileIdp,
  type HostileIdpOptions,
  startHostileIdp,
} from "../helpers/hostile-idp.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  freePort,
  postgresBackend,
  startTestServer,
  type TestOrg,
  type TestServer,
  useTestServer,
} from "../helpers/test-server.js";

// Issue 23: what an outside attack on sign-in through organizations' identity providers found.
// The attacker registers a provider of his own in his own organization (or runs one), and
// sends browsers through it; the login provider is a real OpenID Provider (oidc-provider)
// configured as providers usually are (claims at userinfo, no RFC 9207 `iss`).

const viewer = builtinRoles.find((r) => r.name === "viewer")?.uid as string;

let gh: TestServer;
let lp: TestIdp;
let attacker: TestOrg;
let skew = 0;
const logLines: string[] = [];
const hostiles: HostileIdp[] = [];

async function hostile(opts: HostileIdpOptions = {}): Promise<HostileIdp> {
  const h = await startHostileIdp(opts);
  hostiles.push(h);
  return h;
}

/** Register a provider through the API, as an organization's owner does. */
async function register(
  org: TestOrg,
  issuer: string,
  extra: { clientId?: string; clientSecret?: string; defaultRole?: string } = {},
  server = gh,
) {
  return restCall(
    server.url,
    "POST",
    `/iam/v2beta1/identityProviders/${org.uid}`,
    {
      name: `p-${randomBytes(4).toString("hex")}`,
      defaultRole: extra.defaultRole ?? "",
      oidc: { issuer, clientId: extra.clientId ?? "gatehouse", clientSecret: extra.clientSecret },
    },
    org.owner.headers,
  );
}

/** Delete a provider the attacker registered, so later tests start within the org's limit. */
async function unregister(uid: string) {
  await restCall(
    gh.url,
    "DELETE",
    `/iam/v2beta1/identityProviders/${uid}`,
    undefined,
    attacker.owner.headers,
  );
}

/**
 * A provider row as an older Gatehouse stored it, without today's checks on its issuer: the
 * fix must hold for those too.
 */
async function legacyProvider(org: TestOrg, issuer: string, server = gh): Promise<string> {
  const uid = newChildUid(org.uid);
  await server.store.createIdentityProvider({
    uid,
    groupUid: org.uid,
    name: `legacy-${randomBytes(4).toString("hex")}`,
    description: "",
    defaultRole: "",
    writerUid: "",
    oidc: {
      issuer,
      clientId: "gatehouse",
      clientSecret: "",
      additionalScopes: [],
      groupsClaim: "",
    },
    now: Date.now(),
  });
  return uid;
}

function authorizeUrl(server: TestServer, provider: string | undefined, verifier: string) {
  return cliAuthorizeUrl(server.url, createHash("sha256").update(verifier).digest("base64url"), {
    state: "client-state",
    ...(provider === undefined ? {} : { identity_provider: provider }),
  });
}

/**
 * A browser signing in through `provider` (undefined: the login provider) as `account`:
 * where the sign-in came back to the client, and the API token its code redeems, if any.
 */
async function signIn(
  provider: string | undefined,
  account = "victim",
  server = gh,
): Promise<{ back: URL; token?: string }> {
  const verifier = randomBytes(32).toString("base64url");
  const back = await signInAtIdp(authorizeUrl(server, provider, verifier), account, cliRedirect);
  const code = back.searchParams.get("code");
  if (code === null) return { back };
  const res = await redeemCode(server.url, code, verifier);
  expect(res.status).toBe(200);
  return { back, token: ((await res.json()) as { access_token: string }).access_token };
}

const logged = (from: number) => logLines.slice(from).map((l) => JSON.parse(l));

beforeAll(async () => {
  const port = await freePort();
  lp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: {
      victim: { name: "Victor Tim", email: "victim@corp.test", email_verified: true },
      carol: { name: "Carol", email: "carol@corp.test", email_verified: true },
    },
    conformIdTokenClaims: true,
    omitIss: true,
  });
  gh = await startTestServer(
    {
      GATEHOUSE_LOGIN_ISSUER: lp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: lp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: lp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      // The providers of these tests run on 127.0.0.1.
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG: "3",
      GATEHOUSE_LOG_LEVEL: "info",
    },
    { port, now: () => Date.now() + skew, logStream: { write: (l) => void logLines.push(l) } },
  );
  attacker = await gh.makeOrg("attacker");
});

afterAll(async () => {
  await gh?.close();
  await lp?.close();
  for (const h of hostiles) await h.close();
});

describe("critical: signing in as another person through an organization's provider", () => {
  it("a provider at a /.well-known/ URL whose document names the login provider signs no one in as its people", async () => {
    const { token: victimToken } = await signIn(undefined, "victim");
    expect(decodeJwt(victimToken as string).sub).toBe(personUid(lp.issuer, "victim"));
    // The attacker's document claims the login provider's issuer; its ID tokens, signed with
    // its own key, name the victim.
    const h = await hostile({
      discoveryPath: "/.well-known/openid-configuration",
      discovery: () => ({ issuer: lp.issuer }),
      claims: () => ({ sub: "victim" }),
    });
    const wellKnown = `${h.url}/.well-known/openid-configuration`;
    // Stored as an older Gatehouse took it, the provider signs no one in.
    const uid = await legacyProvider(attacker, wellKnown);
    const { back, token } = await signIn(uid, "victim");
    expect(token && decodeJwt(token).sub).toBeUndefined();
    expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
    expect(h.tokenRequests()).toHaveLength(0);
    // And it can no longer be registered.
    const refused = await register(attacker, wellKnown);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toMatch(/\.well-known/);
  });

  it("a discovery document must name the configured issuer exactly", async () => {
    const h = await hostile({ discovery: (url) => ({ issuer: `${url}/` }) });
    const created = await register(attacker, h.url);
    expect(created.status).toBe(200);
    try {
      const { back, token } = await signIn(created.json.uid);
      expect(token).toBeUndefined();
      expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("people of an organization's provider are its own: another organization's sign-in link binds no existing person", async () => {
    const { token: own } = await signIn(undefined, "carol");
    const carol = decodeJwt(own as string).sub as string;
    expect(carol).toBe(personUid(lp.issuer, "carol"));
    // Another organization registers the very login provider as its own, with a default role.
    const stranger = await gh.makeOrg("stranger");
    const created = await register(stranger, lp.issuer, {
      clientId: lp.clientId,
      clientSecret: lp.clientSecret,
      defaultRole: viewer,
    });
    expect(created.status).toBe(200);
    const uid = created.json.uid as string;
    lp.setRedirectUris([`${gh.url}/oauth/callback`, `${gh.url}/oauth/idp-callback/${uid}`]);
    try {
      const { token } = await signIn(uid, "carol");
      const scoped = decodeJwt(token as string).sub as string;
      expect(scoped).toBe(providerPersonUid(uid, lp.issuer, "carol"));
      expect(scoped).not.toBe(carol);
      // Carol's own identity got nothing in the stranger's organization, and its admin sees
      // only the provider's person.
      const bindings = await restCall(
        gh.url,
        "GET",
        `/iam/v2beta1/roleBindings?uidp.descendants_of=${stranger.uid}`,
        undefined,
        stranger.owner.headers,
      );
      const bound = bindings.json.roleBindings.map(
        (b: { identity: { uid: string } }) => b.identity.uid,
      );
      expect(bound).toContain(scoped);
      expect(bound).not.toContain(carol);
      // The login provider's email is believed for the login provider's own people only.
      const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
        authorization: `Bearer ${token}`,
      });
      expect(me.json.identity.email).toBe("carol@corp.test");
    } finally {
      lp.setRedirectUris([`${gh.url}/oauth/callback`]);
      await restCall(
        gh.url,
        "DELETE",
        `/iam/v2beta1/identityProviders/${uid}`,
        undefined,
        stranger.owner.headers,
      );
    }
  });
});

describe("high: mix-up through the one shared callback", () => {
  it("a provider that relays the browser to the login provider never gets its code", async () => {
    // The hostile provider sends the browser on to the login provider with Gatehouse's
    // client ID there, the state, nonce and PKCE challenge it was sent, and the login
    // provider's callback; the login provider sends no iss.
    const h = await hostile({
      authorize: (q) =>
        `${lp.issuer}/auth?${new URLSearchParams({
          client_id: lp.clientId,
          redirect_uri: `${gh.url}/oauth/callback`,
          response_type: "code",
          scope: q.get("scope") ?? "openid",
          state: q.get("state") ?? "",
          nonce: q.get("nonce") ?? "",
          code_challenge: q.get("code_challenge") ?? "",
          code_challenge_method: "S256",
        })}`,
    });
    const created = await register(attacker, h.url);
    expect(created.status).toBe(200);
    try {
      const from = logLines.length;
      const { back, token } = await signIn(created.json.uid, "victim");
      expect(token).toBeUndefined();
      expect(back.searchParams.get("error")).toBe("access_denied");
      // Neither the login provider's code nor the PKCE verifier went to the hostile provider.
      expect(h.tokenRequests()).toHaveLength(0);
      expect(logged(from).find((l) => l.msg === "login refused")?.reason).toBe("wrong_callback");
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("a login provider accepting sub-paths of its callback never sends its code to an organization's", async () => {
    // The hostile provider relays the browser to the login provider with its own redirect
    // URI (the one Gatehouse sent it); the login provider accepts any path under its
    // registered callback, as some do, and sends no iss. Under the old layout an
    // organization's callback lay there, and its provider redeemed the login provider's code.
    const h = await hostile({
      authorize: (q) =>
        `${lp.issuer}/auth?${new URLSearchParams({
          client_id: lp.clientId,
          redirect_uri: q.get("redirect_uri") ?? "",
          response_type: "code",
          scope: q.get("scope") ?? "openid",
          state: q.get("state") ?? "",
          nonce: q.get("nonce") ?? "",
          code_challenge: q.get("code_challenge") ?? "",
          code_challenge_method: "S256",
        })}`,
    });
    const created = await register(attacker, h.url);
    expect(created.status).toBe(200);
    const own = created.json.redirectUri as string;
    const underLogin = (uri: string) => uri.startsWith(`${gh.url}/oauth/callback`);
    lp.setRedirectUris([`${gh.url}/oauth/callback`, ...(underLogin(own) ? [own] : [])]);
    try {
      // The login provider refuses the redirect URI: the browser never comes back.
      const back = await signIn(created.json.uid, "victim").catch(() => undefined);
      expect(back?.token).toBeUndefined();
      // Neither the login provider's code nor the PKCE verifier went to the hostile provider.
      expect(h.tokenRequests()).toHaveLength(0);
      expect(underLogin(own)).toBe(false);
      // Nothing is served under the login provider's callback any more.
      const under = await fetch(`${gh.url}/oauth/callback/${created.json.uid}?code=c&state=s`);
      expect(under.status).toBe(404);
    } finally {
      lp.setRedirectUris([`${gh.url}/oauth/callback`]);
      await unregister(created.json.uid);
    }
  });

  it("each provider's authorization request names its own redirect URI", async () => {
    const h = await hostile();
    const created = await register(attacker, h.url);
    try {
      const res = await fetch(authorizeUrl(gh, created.json.uid, "v".repeat(43)), {
        redirect: "manual",
      });
      const to = new URL(res.headers.get("location") as string);
      expect(to.origin).toBe(h.url);
      // The API shows it, to be registered at the provider.
      expect(created.json.redirectUri).toBe(`${gh.url}/oauth/idp-callback/${created.json.uid}`);
      expect(to.searchParams.get("redirect_uri")).toBe(
        `${gh.url}/oauth/idp-callback/${created.json.uid}`,
      );
    } finally {
      await unregister(created.json.uid);
    }
  });

  it.each([
    ["without iss", undefined],
    ["with another issuer's iss", "https://other.test"],
  ])(
    "a provider advertising RFC 9207 whose answer comes %s is refused before its token endpoint",
    async (_case, iss) => {
      const h = await hostile({
        discovery: () => ({ authorization_response_iss_parameter_supported: true }),
        authorize: (q) => {
          const back = new URL(q.get("redirect_uri") as string);
          back.searchParams.set("code", "c");
          back.searchParams.set("state", q.get("state") ?? "");
          if (iss) back.searchParams.set("iss", iss);
          return back.href;
        },
      });
      const created = await register(attacker, h.url);
      try {
        const { back } = await signIn(created.json.uid);
        expect(back.searchParams.get("error")).toBe("access_denied");
        expect(h.tokenRequests()).toHaveLength(0);
      } finally {
        await unregister(created.json.uid);
      }
    },
  );
});

describe("high: provider documents are bounded and expire", () => {
  it.each([
    ["discovery document", { discovery: 1024 * 1024 }, "temporarily_unavailable"],
    ["JWKS", { jwks: 1024 * 1024 }, "access_denied"],
    ["token answer", { token: 1024 * 1024 }, "access_denied"],
  ] as const)("a 1 MiB %s is not read: the sign-in fails", async (_doc, pad, error) => {
    const h = await hostile({ pad });
    const created = await register(attacker, h.url);
    try {
      const from = logLines.length;
      const { back, token } = await signIn(created.json.uid);
      expect(token).toBeUndefined();
      expect(back.searchParams.get("error")).toBe(error);
      expect(JSON.stringify(logged(from))).toMatch(/larger than 131072 bytes/);
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("a discovered configuration is used for 10 minutes, then discovered again", async () => {
    const h = await hostile();
    const created = await register(attacker, h.url);
    const discoveries = () => h.requests.filter((r) => r.path.startsWith("/.well-known/")).length;
    try {
      await fetch(authorizeUrl(gh, created.json.uid, "v".repeat(43)), { redirect: "manual" });
      await fetch(authorizeUrl(gh, created.json.uid, "v".repeat(43)), { redirect: "manual" });
      expect(discoveries()).toBe(1);
      skew += 11 * 60_000;
      await fetch(authorizeUrl(gh, created.json.uid, "v".repeat(43)), { redirect: "manual" });
      expect(discoveries()).toBe(2);
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("an organization has at most GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG providers, in all its groups", async () => {
    const org = await gh.makeOrg("many");
    const sub = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name: "sub" },
      org.owner.headers,
    );
    expect(sub.status).toBe(200);
    const issuer = "https://idp.example.com";
    expect((await register(org, issuer)).status).toBe(200);
    expect((await register(org, issuer)).status).toBe(200);
    const third = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${sub.json.uid}`,
      { name: "third", oidc: { issuer, clientId: "c" } },
      org.owner.headers,
    );
    expect(third.status).toBe(200);
    const fourth = await register(org, issuer);
    expect(fourth.status).toBe(400);
    expect(fourth.json.code).toBe(9); // FAILED_PRECONDITION
    expect(fourth.json.message).toMatch(/3 identity providers/);
    // Another organization is not concerned.
    expect((await register(await gh.makeOrg("other"), issuer)).status).toBe(200);
  });
});

describe("low: what sign-in tells and stores", () => {
  it("an unreachable issuer: a generic error for the browser, the cause in the log", async () => {
    const closed = await freePort();
    const created = await register(attacker, `http://127.0.0.1:${closed}`);
    try {
      const from = logLines.length;
      const { back } = await signIn(created.json.uid);
      expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
      expect(back.searchParams.get("error_description")).toBe(
        "the identity provider cannot be reached",
      );
      expect(JSON.stringify(logged(from))).toMatch(/ECONNREFUSED/);
    } finally {
      await unregister(created.json.uid);
    }
  });

  it.each([
    ["a NUL in the subject", { sub: "vic\u0000tim" }],
    ["a subject of 300 characters", { sub: "s".repeat(300) }],
    ["a NUL in the email", { sub: "nul-mail", email: "a\u0000@x.test", email_verified: true }],
  ])("%s: the sign-in is refused, nothing stored", async (_case, claims) => {
    const h = await hostile({ claims: () => claims });
    const created = await register(attacker, h.url);
    try {
      const from = logLines.length;
      const { back, token } = await signIn(created.json.uid);
      expect(token).toBeUndefined();
      expect(back.searchParams.get("error")).toBe("access_denied");
      expect(logged(from).find((l) => l.msg === "login refused")?.detail).toMatch(
        /control characters|too long/,
      );
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("an organization provider's email_verified is not believed: no email for email-bound invites", async () => {
    const h = await hostile({
      claims: () => ({ sub: "boss", name: "Boss", email: "boss@corp.test", email_verified: true }),
    });
    const created = await register(attacker, h.url);
    try {
      const { token } = await signIn(created.json.uid);
      expect(decodeJwt(token as string).email).toBeUndefined();
      const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
        authorization: `Bearer ${token}`,
      });
      expect(me.json.identity.email ?? "").toBe("");
      expect(me.json.identity.name).toBe("Boss");
      // An invite bound to that email, in an organization the code leaked from, stays unused.
      const corp = await gh.makeOrg("corp");
      const invite = await restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/groupInvites/${corp.uid}`,
        { roleUid: viewer, email: "boss@corp.test" },
        corp.owner.headers,
      );
      expect(invite.status).toBe(200);
      const redeemed = await restCall(
        gh.url,
        "POST",
        "/iam/v2beta1/groupInvites:redeem",
        { code: invite.json.code },
        { authorization: `Bearer ${token}` },
      );
      expect(redeemed.status).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(redeemed.json)).toMatch(/email/i);
    } finally {
      await unregister(created.json.uid);
    }
  });

  it("name and email come from userinfo when the ID token has only the subject", async () => {
    const { token } = await signIn(undefined, "victim");
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${token}`,
    });
    expect(me.json.identity.name).toBe("Victor Tim");
    expect(me.json.identity.email).toBe("victim@corp.test");
    expect(decodeJwt(token as string).email).toBe("victim@corp.test");
  });
});

describe("low: private addresses", () => {
  it("without GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES, no call goes to a provider on a private address", async () => {
    const closedServer = await startTestServer({
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    });
    try {
      const org = await closedServer.makeOrg("private");
      const h = await hostile();
      const refused = await register(org, h.url, {}, closedServer);
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.json)).toMatch(/private or loopback/);
      // Stored before the check, or named by a host that resolves to a private address: the
      // connection itself is refused.
      for (const issuer of [h.url, h.url.replace("127.0.0.1", "localhost")]) {
        const uid = await legacyProvider(org, issuer, closedServer);
        const { back } = await signIn(uid, "victim", closedServer);
        expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
      }
      expect(h.requests).toHaveLength(0);
    } finally {
      await closedServer.close();
    }
  });
});

describe("low: PostgreSQL and failures of the server itself", () => {
  let org: TestOrg;
  const pgLog: string[] = [];
  const pgs = useTestServer(
    {
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG: "2",
      GATEHOUSE_LOG_LEVEL: "info",
    },
    { backend: postgresBackend, logStream: { write: (l) => void pgLog.push(l) } },
  );
  beforeAll(async () => {
    org = await pgs.makeOrg("pg");
  });

  it.each([
    ["subject", { sub: "nul\u0000sub" }],
    ["email", { sub: "nul-email", email: "n\u0000@x.test", email_verified: true }],
  ])("a NUL in the %s: access_denied with the cause in the log, not a 500", async (_f, claims) => {
    const h = await hostile({ claims: () => claims });
    const created = await register(org, h.url, {}, pgs);
    expect(created.status).toBe(200);
    try {
      const from = pgLog.length;
      const { back, token } = await signIn(created.json.uid, "x", pgs);
      expect(token).toBeUndefined();
      expect(back.searchParams.get("error")).toBe("access_denied");
      const refusal = pgLog
        .slice(from)
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === "login refused");
      expect(refusal?.detail).toMatch(/control characters/);
    } finally {
      await restCall(
        pgs.url,
        "DELETE",
        `/iam/v2beta1/identityProviders/${created.json.uid}`,
        undefined,
        org.owner.headers,
      );
    }
  });

  it("the provider limit holds on PostgreSQL too", async () => {
    const many = await pgs.makeOrg("pg-many");
    expect((await register(many, "https://idp.example.com", {}, pgs)).status).toBe(200);
    expect((await register(many, "https://idp.example.com", {}, pgs)).status).toBe(200);
    const third = await register(many, "https://idp.example.com", {}, pgs);
    expect(third.status).toBe(400);
    expect(third.json.code).toBe(9);
  });

  it("a store failure at the callback is logged with its cause; the browser gets a plain page", async () => {
    const lines: string[] = [];
    const s = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
        GATEHOUSE_LOG_LEVEL: "info",
      },
      { logStream: { write: (l) => void lines.push(l) } },
    );
    const h = await hostile();
    const o = await s.makeOrg("broken");
    const created = await register(o, h.url, {}, s);
    const started = await fetch(authorizeUrl(s, created.json.uid, "v".repeat(43)), {
      redirect: "manual",
    });
    const cookie = (started.headers.get("set-cookie") ?? "").split(";", 1)[0] as string;
    const atIdp = await fetch(started.headers.get("location") as string, { redirect: "manual" });
    const callback = atIdp.headers.get("location") as string;
    // The database goes away between the person's leaving and coming back.
    await s.store.close();
    try {
      const res = await fetch(callback, { redirect: "manual", headers: { cookie } });
      expect(res.status).toBe(500);
      expect(res.headers.get("content-type")).toMatch(/text\/html/);
      expect(await res.text()).toMatch(/failed to complete this request/);
      const failure = lines
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === "sign-in request failed");
      expect(failure?.err?.message).toBeTruthy();
    } finally {
      await s.close().catch(() => {});
    }
  });
});
