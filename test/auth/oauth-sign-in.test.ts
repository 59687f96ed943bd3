import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/auth/login/person.js";
import {
  cliAuthorizeUrl,
  cliRedirect,
  type Pkce,
  newPkce as pkce,
} from "../helpers/cli-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// People's sign-in, end to end: Gatehouse's /oauth endpoints in front of a real OpenID
// Provider (oidc-provider), driven as the CLI's and a browser's HTTP requests would.

interface TokenAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON the tests read
  json: any;
}

const logLines: string[] = [];
let gh: TestServer;
let idp: TestIdp;

async function token(form: Record<string, string>): Promise<TokenAnswer> {
  const res = await fetch(`${gh.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
  return { status: res.status, json: await res.json() };
}

function authorizeUrl(p: Pkce, extra: Record<string, string> = {}, server = gh): string {
  return cliAuthorizeUrl(server.url, p.challenge, { state: "client-state-1", ...extra });
}

/** Sign in as `account` and return where the browser is sent back to. */
async function signIn(account: string, p = pkce(), extra: Record<string, string> = {}) {
  return signInAtIdp(authorizeUrl(p, extra), account, cliRedirect);
}

async function codeFor(account: string, p: Pkce, extra: Record<string, string> = {}) {
  const back = await signIn(account, p, extra);
  expect(back.searchParams.get("error")).toBeNull();
  expect(back.searchParams.get("state")).toBe("client-state-1");
  const code = back.searchParams.get("code");
  expect(code).toBeTruthy();
  return code as string;
}

async function login(account: string) {
  const p = pkce();
  const code = await codeFor(account, p);
  const answer = await token({
    grant_type: "authorization_code",
    code,
    code_verifier: p.verifier,
    redirect_uri: cliRedirect,
    client_id: "gatehouse-cli",
  });
  expect(answer.status).toBe(200);
  return answer.json as { access_token: string; refresh_token: string; expires_in: number };
}

const caller = (accessToken: string) =>
  restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
    authorization: `Bearer ${accessToken}`,
  });

beforeAll(async () => {
  const port = await freePort();
  idp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: {
      alice: { name: "Alice Example", email: "alice@example.com", email_verified: true },
      bob: { name: "Bob", email: "bob@example.com", email_verified: false },
    },
  });
  gh = await startTestServer(
    {
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_LOG_LEVEL: "info",
    },
    { port, logStream: { write: (l) => void logLines.push(l) } },
  );
});

afterAll(async () => {
  await gh?.close();
  await idp?.close();
});

describe("discovery", () => {
  it("advertises the OAuth endpoints and the fields OIDC Discovery requires", async () => {
    const doc = await (await fetch(`${gh.url}/.well-known/openid-configuration`)).json();
    expect(doc).toMatchObject({
      issuer: gh.url,
      authorization_endpoint: `${gh.url}/oauth/authorize`,
      token_endpoint: `${gh.url}/oauth/token`,
      revocation_endpoint: `${gh.url}/oauth/revoke`,
      jwks_uri: `${gh.url}/.well-known/jwks.json`,
      sts_endpoint: `${gh.url}/sts/exchange`,
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:device_code",
      ],
      device_authorization_endpoint: `${gh.url}/oauth/device_authorization`,
      gatehouse_login_provider: { name: new URL(idp.issuer).host },
    });
  });
});

describe("the authorization code flow", () => {
  it("signs a person in: an API token for their identity and a refresh token", async () => {
    const tokens = await login("alice");
    expect(tokens.expires_in).toBeGreaterThan(3500);
    expect(tokens.refresh_token).toMatch(/^gatehouse_rt_/);
    const me = await caller(tokens.access_token);
    expect(me.status).toBe(200);
    expect(me.json.identity.uid).toBe(personUid(idp.issuer, "alice"));
    expect(me.json.identity.name).toBe("Alice Example");
    expect(me.json.identity.email).toBe("alice@example.com");
    // The sign-in is in the audit trail, by and about the person. A person belongs to no
    // organization, so no API caller lists it yet: the operator's view (the store) does.
    const trail = await gh.store.listEvents({
      childrenOf: personUid(idp.issuer, "alice"),
      filters: { type: "dev.gatehouse.auth.person.signed_in.v1" },
      order: { field: "create_time", desc: false },
      skip: 0,
      limit: 10,
    });
    expect(trail.items.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(trail.items[0]!.data)).toMatchObject({
      actor: { uid: personUid(idp.issuer, "alice"), subject: "alice" },
      protocol: "http",
    });
  });

  it("accepts the IPv6 loopback redirect of RFC 8252, any port", async () => {
    const p = pkce();
    const v6 = "http://[::1]:61234/cb";
    const back = await signInAtIdp(authorizeUrl(p, { redirect_uri: v6 }), "alice", v6);
    const code = back.searchParams.get("code") as string;
    expect(code).toBeTruthy();
    const answer = await token({
      grant_type: "authorization_code",
      code,
      code_verifier: p.verifier,
      redirect_uri: v6,
      client_id: "gatehouse-cli",
    });
    expect(answer.status).toBe(200);
  });

  it("keeps an email only when the provider verified it", async () => {
    const tokens = await login("bob");
    const me = await caller(tokens.access_token);
    expect(me.json.identity.uid).toBe(personUid(idp.issuer, "bob"));
    expect(me.json.identity.email ?? "").toBe("");
  });

  it("rotates the refresh token on every use; reusing an old one revokes the chain", async () => {
    const first = await login("alice");
    const second = await token({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(second.status).toBe(200);
    expect(second.json.refresh_token).not.toBe(first.refresh_token);
    expect((await caller(second.json.access_token)).status).toBe(200);

    const reuse = await token({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(reuse).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    expect(reuse.json.error_description).toMatch(/already used/);
    // The newest refresh token and every access token of the session are revoked with it.
    const after = await token({
      grant_type: "refresh_token",
      refresh_token: second.json.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(after).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    const refused = await caller(second.json.access_token);
    expect(refused.status).toBe(401);
    expect(refused.json.details[0].reason).toBe("SESSION_REVOKED");
  });

  it("refuses a replayed code and revokes what it issued", async () => {
    const p = pkce();
    const code = await codeFor("alice", p);
    const form = {
      grant_type: "authorization_code",
      code,
      code_verifier: p.verifier,
      redirect_uri: cliRedirect,
      client_id: "gatehouse-cli",
    };
    const first = await token(form);
    expect(first.status).toBe(200);
    const replay = await token(form);
    expect(replay).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    expect(replay.json.access_token).toBeUndefined();
    expect((await caller(first.json.access_token)).status).toBe(401);
    const refresh = await token({
      grant_type: "refresh_token",
      refresh_token: first.json.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(refresh.json.error).toBe("invalid_grant");
  });

  it("refuses a wrong PKCE verifier, another redirect_uri or another client", async () => {
    const p = pkce();
    const code = await codeFor("alice", p);
    const base = { grant_type: "authorization_code", code, redirect_uri: cliRedirect };
    for (const [form, why] of [
      [{ ...base, code_verifier: pkce().verifier, client_id: "gatehouse-cli" }, /code_verifier/],
      [
        {
          ...base,
          code_verifier: p.verifier,
          client_id: "gatehouse-cli",
          redirect_uri: "http://127.0.0.1:1/other",
        },
        /redirect_uri/,
      ],
      [{ ...base, code_verifier: p.verifier, client_id: "gatehouse-console" }, /another client/],
    ] as const) {
      const answer = await token(form);
      expect(answer).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
      expect(answer.json.error_description).toMatch(why);
      expect(answer.json.access_token).toBeUndefined();
    }
    const unknownClient = await token({ ...base, code_verifier: p.verifier, client_id: "x" });
    expect(unknownClient).toMatchObject({ status: 401, json: { error: "invalid_client" } });
  });

  it("logout (revocation) ends the session: its tokens stop working", async () => {
    const tokens = await login("alice");
    const res = await fetch(`${gh.url}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.refresh_token, client_id: "gatehouse-cli" }),
    });
    expect(res.status).toBe(200);
    expect((await caller(tokens.access_token)).status).toBe(401);
    const refresh = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(refresh.json.error).toBe("invalid_grant");
  });

  it("refuses a refresh once the identity is deleted", async () => {
    const tokens = await login("alice");
    await gh.store.deleteIdentity(personUid(idp.issuer, "alice"));
    const refresh = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(refresh).toMatchObject({ status: 400, json: { error: "invalid_grant" } });
    expect((await caller(tokens.access_token)).status).toBe(401);
  });
});

describe("refusals before any redirect", () => {
  it.each([
    ["a non-loopback host", "gatehouse-cli", "http://evil.example/callback"],
    ["localhost (may resolve anywhere)", "gatehouse-cli", "http://localhost:5000/callback"],
    ["https on loopback", "gatehouse-cli", "https://127.0.0.1:5000/callback"],
    ["a foreign console origin", "gatehouse-console", "https://evil.example/console/"],
    ["an unknown client", "someone-else", cliRedirect],
  ])("%s: an error page, no Location", async (_name, clientId, redirectUri) => {
    const res = await fetch(
      `${authorizeUrl(pkce())}&${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri })}`.replace(
        /client_id=gatehouse-cli&redirect_uri=[^&]+&/,
        "",
      ),
      { redirect: "manual" },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toMatch(/Sign-in failed/);
  });

  it.each([
    ["a state of more than 512 characters", { state: "s".repeat(513) }, /state is too long/],
    [
      "a redirect_uri of more than 1024 characters",
      { redirect_uri: `${cliRedirect}/${"r".repeat(1024)}` },
      /redirect_uri is too long/,
    ],
    [
      // Within both limits, but JSON writes each control character as six bytes: sealed, the
      // login would be over the 4,096 bytes a browser keeps of a cookie.
      "a state and redirect_uri that fit their limits but not a cookie",
      { state: "\u0001".repeat(512), redirect_uri: `${cliRedirect}/${"r".repeat(900)}` },
      /too long to keep for the sign-in/,
    ],
  ])("%s: an error page, nothing kept for the login", async (_name, extra, why) => {
    // A login in flight is kept in a cookie until it completes or expires: a cookie holds
    // at most 4 kB.
    const res = await fetch(authorizeUrl(pkce(), extra), { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.text()).toMatch(why);
  });

  it("keeps a login at both limits in a cookie a browser keeps", async () => {
    const extra = { state: "s".repeat(512), redirect_uri: `${cliRedirect}/${"r".repeat(990)}` };
    const res = await fetch(authorizeUrl(pkce(), extra), { redirect: "manual" });
    expect(res.status).toBe(302);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(cookie).toMatch(/=./);
    expect(Buffer.byteLength(cookie)).toBeLessThanOrEqual(4096);
  });

  it("without client_id: an error page saying it is required", async () => {
    const res = await fetch(`${gh.url}/oauth/authorize`, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toMatch(/client_id is required/);
  });

  it("refuses to start without PKCE S256, back at the client", async () => {
    const res = await fetch(authorizeUrl(pkce(), { code_challenge_method: "plain" }), {
      redirect: "manual",
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get("location") as string);
    expect(back.origin + back.pathname).toBe(cliRedirect);
    expect(back.searchParams.get("error")).toBe("invalid_request");
    expect(back.searchParams.get("state")).toBe("client-state-1");
  });

  it("a callback with an unknown state is refused with a page", async () => {
    const res = await fetch(`${gh.url}/oauth/callback?state=forged&code=abc`, {
      redirect: "manual",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });
});

type Claims = Record<string, unknown>;

describe("refused answers of the identity provider", () => {
  /** Start a login: where the browser goes next, and the cookie it was given. */
  async function upstreamUrl(): Promise<{ up: URL; cookie: string }> {
    const res = await fetch(authorizeUrl(pkce()), { redirect: "manual" });
    expect(res.status).toBe(302);
    const setCookie = res.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(
      /^gatehouse_login=[\w.-]+; Path=\/oauth\/; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );
    return {
      up: new URL(res.headers.get("location") as string),
      cookie: setCookie.split(";", 1)[0]!,
    };
  }

  it("an error response from the provider goes back to the client as access_denied", async () => {
    const { up, cookie } = await upstreamUrl();
    const state = up.searchParams.get("state") as string;
    const callback = `${gh.url}/oauth/callback?${new URLSearchParams({ error: "access_denied", state, iss: idp.issuer })}`;
    const res = await fetch(callback, { redirect: "manual", headers: { cookie } });
    const back = new URL(res.headers.get("location") as string);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("code")).toBeNull();
    // The login is over: its cookie is cleared, and a browser that obeys, sending no cookie,
    // is refused; so is a replay of the cookie itself (the store recorded the login spent).
    expect(res.headers.get("set-cookie")).toMatch(/^gatehouse_login=; .*Max-Age=0/);
    const again = await fetch(callback, { redirect: "manual" });
    expect(again.status).toBe(400);
    const replay = await fetch(callback, { redirect: "manual", headers: { cookie } });
    expect(replay.status).toBe(400);
  });

  it("a callback in another browser than the one that started the login is refused", async () => {
    // A login forced on someone else (login CSRF): the provider's answer is genuine, but the
    // browser it lands in never started the login, so it has no cookie for it.
    const stopAt = `${gh.url}/oauth/callback`;
    const answer = await signInAtIdp(authorizeUrl(pkce()), "alice", stopAt);
    expect(answer.searchParams.get("code")).toBeTruthy();
    const res = await fetch(answer, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toMatch(/unknown, expired or already complete/);
  });

  it("a login cookie that was altered, or belongs to another login, is refused", async () => {
    const first = await upstreamUrl();
    const second = await upstreamUrl();
    const state = first.up.searchParams.get("state") as string;
    const callback = `${gh.url}/oauth/callback?${new URLSearchParams({ error: "access_denied", state, iss: idp.issuer })}`;
    const [name, value] = first.cookie.split("=") as [string, string];
    const flipped = `${value.slice(0, 20)}${value[20] === "A" ? "B" : "A"}${value.slice(21)}`;
    const otherValue = second.cookie.split("=")[1];
    for (const cookie of [`${name}=${flipped}`, `${name}=${otherValue}`]) {
      const res = await fetch(callback, { redirect: "manual", headers: { cookie } });
      expect(res.status).toBe(400);
    }
    // The untouched cookie still answers.
    const res = await fetch(callback, { redirect: "manual", headers: { cookie: first.cookie } });
    expect(res.status).toBe(302);
  });

  it.each([
    ["a wrong nonce", /"nonce"/, (c: Claims) => ({ ...c, nonce: "not-the-one-sent" })],
    ["an ID token for another client", /"aud"/, (c: Claims) => ({ ...c, aud: "other" })],
    ["another issuer", /"iss"/, (c: Claims) => ({ ...c, iss: "http://127.0.0.1:1" })],
    ["an expired ID token", /"exp"/, (c: Claims) => ({ ...c, exp: 1_000_000_000 })],
  ])("%s: access_denied, nothing issued", async (_name, why, change) => {
    idp.tamperIdToken(change);
    const logged = logLines.length;
    try {
      const back = await signIn("alice");
      expect(back.searchParams.get("error")).toBe("access_denied");
      // The browser hears that the answer was refused; the log, which check refused it.
      expect(back.searchParams.get("error_description")).toBe(
        "the identity provider's answer was refused",
      );
      const refusal = logLines
        .slice(logged)
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === "login refused");
      expect(refusal?.detail).toMatch(why);
      expect(back.searchParams.get("code")).toBeNull();
    } finally {
      idp.tamperIdToken(undefined);
    }
  });
});

describe("code and refresh token lifetimes", () => {
  it("a login expires after 10 min, a code after 60 s; GATEHOUSE_REFRESH_TOKEN_TTL bounds each refresh token, counted from its issue", async () => {
    const port = await freePort();
    const shortIdp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: { alice: { email: "a@example.com", email_verified: true } },
    });
    let skew = 0;
    const server = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: shortIdp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: shortIdp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: shortIdp.clientSecret,
        GATEHOUSE_REFRESH_TOKEN_TTL: "2m",
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      },
      { port, now: () => Date.now() + skew },
    );
    try {
      // A login in flight lasts ten minutes on the server's clock too: its sealed cookie,
      // replayed after that, opens but is refused (the browser's Max-Age is not the only bound).
      const started = await fetch(authorizeUrl(pkce(), {}, server), { redirect: "manual" });
      const state = new URL(started.headers.get("location") as string).searchParams.get("state");
      const cookie = (started.headers.get("set-cookie") ?? "").split(";", 1)[0]!;
      const lateAnswer = `${server.url}/oauth/callback?${new URLSearchParams({ error: "access_denied", state: state as string })}`;
      skew = 600_001;
      const refused = await fetch(lateAnswer, { redirect: "manual", headers: { cookie } });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toMatch(/unknown, expired or already complete/);
      skew = 0;
      const p = pkce();
      const back = await signInAtIdp(authorizeUrl(p, {}, server), "alice", cliRedirect);
      const res = await fetch(`${server.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: back.searchParams.get("code") as string,
          code_verifier: p.verifier,
          redirect_uri: cliRedirect,
          client_id: "gatehouse-cli",
        }),
      });
      const tokens = (await res.json()) as {
        refresh_token: string;
        refresh_token_expires_in: number;
      };
      expect(tokens.refresh_token_expires_in).toBe(120);
      const refresh = (token: string) =>
        fetch(`${server.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: token,
            client_id: "gatehouse-cli",
          }),
        }).then((r) => r.json() as Promise<{ error?: string; refresh_token?: string }>);
      // A code lives 60 s: one redeemed later is refused, and issues nothing.
      const late = pkce();
      const lateBack = await signInAtIdp(authorizeUrl(late, {}, server), "alice", cliRedirect);
      skew = 61_000;
      const expired = await fetch(`${server.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: lateBack.searchParams.get("code") as string,
          code_verifier: late.verifier,
          redirect_uri: cliRedirect,
          client_id: "gatehouse-cli",
        }),
      });
      expect(expired.status).toBe(400);
      expect(await expired.json()).toEqual({
        error: "invalid_grant",
        error_description: "the code is unknown, expired or revoked",
      });
      skew = 100_000; // within the lifetime: rotated, and the new one lives 2 minutes from now
      const next = await refresh(tokens.refresh_token);
      expect(next.error).toBeUndefined();
      skew = 100_000 + 121_000; // past the new token's lifetime
      expect((await refresh(next.refresh_token as string)).error).toBe("invalid_grant");
    } finally {
      await server.close();
      await shortIdp.close();
    }
  });
});

describe("a login provider that requires a verified email", () => {
  it("refuses a person whose email is not verified", async () => {
    const port = await freePort();
    const strict = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: {
        bob: { email: "bob@example.com", email_verified: false },
        carol: { email: "carol@example.com", email_verified: true },
      },
    });
    const server = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: strict.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: strict.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: strict.clientSecret,
        GATEHOUSE_LOGIN_REQUIRE_VERIFIED_EMAIL: "true",
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      },
      { port },
    );
    try {
      const bob = await signInAtIdp(authorizeUrl(pkce(), {}, server), "bob", cliRedirect);
      expect(bob.searchParams.get("error")).toBe("access_denied");
      expect(bob.searchParams.get("error_description")).toMatch(/verified email/);
      const carol = await signInAtIdp(authorizeUrl(pkce(), {}, server), "carol", cliRedirect);
      expect(carol.searchParams.get("code")).toBeTruthy();
      expect(await server.store.getIdentity(personUid(strict.issuer, "bob"))).toBeUndefined();
    } finally {
      await server.close();
      await strict.close();
    }
  });
});

describe("a login provider that cannot be reached", () => {
  it("is asked once per 30 s: logins meanwhile fail at once, back at the client", async () => {
    // A provider whose discovery document fails, counting how often it is asked.
    let asked = 0;
    const broken = http.createServer((req, res) => {
      if (req.url?.startsWith("/.well-known/openid-configuration")) asked++;
      res.writeHead(503).end();
    });
    await new Promise<void>((r) => broken.listen(0, "127.0.0.1", r));
    const issuer = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
    let skew = 0;
    const server = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: "gatehouse",
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      },
      { now: () => Date.now() + skew },
    );
    try {
      const attempt = async () => {
        const res = await fetch(authorizeUrl(pkce(), {}, server), { redirect: "manual" });
        expect(res.status).toBe(302);
        const back = new URL(res.headers.get("location")!);
        expect(`${back.origin}${back.pathname}`).toBe(cliRedirect);
        expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
        expect(back.searchParams.get("state")).toBe("client-state-1");
      };
      await attempt();
      expect(asked).toBe(1);
      for (let i = 0; i < 5; i++) await attempt();
      expect(asked).toBe(1);
      skew += 31_000;
      await attempt();
      expect(asked).toBe(2);
    } finally {
      await server.close();
      await new Promise((r) => broken.close(r));
    }
  });
});
