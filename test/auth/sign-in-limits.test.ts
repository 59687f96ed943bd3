import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { createSignInPurge } from "../../src/auth/oauth/sign-in-purge.js";
import { newChildUid } from "../../src/uid.js";
import { cliAuthorizeUrl, newPkce, redeemCode } from "../helpers/cli-sign-in.js";
import { useProviderSignIn } from "../helpers/provider-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { type CookieJar, cookieHeaderOf, signInAtIdp } from "../helpers/test-idp.js";
import {
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// What an outsider could make Gatehouse do through /oauth/*: spend its token-request quota at a
// provider by replaying forged callbacks, fill the database with throw-away people through a
// provider of his own, and fill a visitor's browser with login cookies.

const anyone = new Proxy({} as Record<string, { name: string }>, {
  get: (_t, id) => (typeof id === "string" ? { name: id } : undefined),
});

/** An OpenID Provider that answers every token request with invalid_grant, and counts them. */
async function startCountingProvider(): Promise<{
  issuer: string;
  tokenRequests: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const http: Server = createServer((req, res) => {
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (req.url === "/.well-known/openid-configuration") {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["ES256"],
      });
    }
    if (req.url === "/jwks") return json(200, { keys: [] });
    if (req.url === "/token") {
      count++;
      return json(400, { error: "invalid_grant", error_description: "no such code" });
    }
    return json(404, {});
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    issuer,
    tokenRequests: () => count,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

function authorizeUrl(gh: TestServer, provider: string, challenge: string): string {
  return cliAuthorizeUrl(gh.url, challenge, { identity_provider: provider });
}

async function createProvider(gh: TestServer, org: TestOrg, issuer: string, secret = "s") {
  const res = await restCall(
    gh.url,
    "POST",
    `/iam/v2beta1/identityProviders/${org.uid}`,
    { name: "SSO", oidc: { issuer, clientId: "gatehouse", clientSecret: secret } },
    org.owner.headers,
  );
  expect(res.status).toBe(200);
  return res.json.uid as string;
}

/** Start a sign-in in `jar`'s browser: where it goes next (the provider). */
async function authorize(url: string, jar: CookieJar): Promise<Response> {
  const at = new URL(url);
  const res = await fetch(at, { redirect: "manual", headers: { cookie: cookieHeaderOf(jar, at) } });
  const cookies = jar.get(at.host) ?? new Map<string, string>();
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";", 1);
    const eq = pair?.indexOf("=") ?? -1;
    if (pair && eq > 0) cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  jar.set(at.host, cookies);
  return res;
}

/** Trade a code for tokens, as the client does. */
const redeem = (gh: TestServer, code: string, verifier: string) =>
  redeemCode(gh.url, code, verifier);

describe.each(backends)("forged callbacks on %s", (backend) => {
  let gh: TestServer;
  // A second replica on the same database.
  let other: TestServer;
  let hostile: Awaited<ReturnType<typeof startCountingProvider>>;
  let provider: string;
  let dir = "";

  beforeAll(async () => {
    hostile = await startCountingProvider();
    const env = {
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      GATEHOUSE_OAUTH_RATE_LIMIT: "5",
    };
    if (backend === "sqlite") {
      dir = mkdtempSync(join(tmpdir(), "gatehouse-sign-in-"));
      gh = await startTestServer({ ...env, GATEHOUSE_DB: join(dir, "db.sqlite") });
    } else {
      gh = await startTestServer(env, { backend });
    }
    other = await startTestServer({
      ...env,
      GATEHOUSE_DB: gh.config.dbPath,
      GATEHOUSE_DATABASE_URL: gh.config.databaseUrl,
    });
    provider = await createProvider(gh, await gh.makeOrg("acme"), hostile.issuer);
  });
  afterAll(async () => {
    await gh?.close();
    await other?.close();
    await hostile?.close();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  it("redeem a sealed login once, on every replica: a replay never reaches the provider", async () => {
    const res = await fetch(authorizeUrl(gh, provider, newPkce().challenge), {
      redirect: "manual",
    });
    expect(res.status).toBe(302);
    const state = new URL(res.headers.get("location") as string).searchParams.get("state");
    const cookie = (res.headers.get("set-cookie") ?? "").split(";", 1)[0] as string;
    const callback = `${gh.url}/oauth/idp-callback/${provider}?${new URLSearchParams({ code: "forged", state: state as string })}`;
    const first = await fetch(callback, { redirect: "manual", headers: { cookie } });
    expect(first.status).toBe(302);
    expect(new URL(first.headers.get("location") as string).searchParams.get("error")).toBe(
      "access_denied",
    );
    expect(hostile.tokenRequests()).toBe(1);
    for (const replica of [gh, other, other]) {
      const replay = callback.replace(gh.url, replica.url);
      const again = await fetch(replay, { redirect: "manual", headers: { cookie } });
      expect(again.status).toBe(400);
      expect(await again.text()).toMatch(/already complete/);
    }
    expect(hostile.tokenRequests()).toBe(1);
  });

  it("are limited per client address, as authorize is: 429 with Retry-After", async () => {
    // 5 a minute each (GATEHOUSE_OAUTH_RATE_LIMIT); the test above spent some of them.
    const statuses = async (url: string) => {
      const seen: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 7; i++) {
        const res = await fetch(url, { redirect: "manual" });
        await res.arrayBuffer();
        seen.push(res.status);
        if (res.status === 429) retryAfter = res.headers.get("retry-after");
      }
      return { seen, retryAfter };
    };
    const auth = await statuses(authorizeUrl(gh, provider, newPkce().challenge));
    expect(auth.seen.slice(0, 4)).toEqual([302, 302, 302, 302]);
    expect(auth.seen.slice(4)).toEqual([429, 429, 429]);
    expect(Number(auth.retryAfter)).toBeGreaterThan(0);
    // A callback for no login in flight is refused, and never counted.
    const forged = await statuses(`${gh.url}/oauth/callback?code=forged&state=x`);
    expect(forged.seen).toEqual([400, 400, 400, 400, 400, 400, 400]);
    // Those of a login in flight are (here replays of one, on the replica whose authorize
    // quota is left; the first test spent two of its callbacks).
    const started = await fetch(authorizeUrl(other, provider, newPkce().challenge), {
      redirect: "manual",
    });
    const state = new URL(started.headers.get("location") as string).searchParams.get("state");
    const cookie = (started.headers.get("set-cookie") ?? "").split(";", 1)[0] as string;
    const callback = `${other.url}/oauth/idp-callback/${provider}?${new URLSearchParams({ code: "forged", state: state as string })}`;
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(callback, { redirect: "manual", headers: { cookie } });
      await res.arrayBuffer();
      seen.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    // 5 a minute: the first test's two replays here, then the first, two replays, and no more.
    expect(seen).toEqual([302, 400, 400, 429, 429]);
  });
});

describe.each(backends)("sign-ins through an organization's provider on %s", (backend) => {
  let clock = Date.now();
  const s = useProviderSignIn({
    backend,
    people: anyone,
    env: { GATEHOUSE_SIGN_IN_RATE_LIMIT: "3" },
    now: () => clock,
  });
  let provider: string;

  beforeAll(async () => {
    const made = await s.createProvider(s.org.uid, { name: "SSO" });
    expect(made.status).toBe(200);
    provider = made.json.uid;
  });

  /** Sign `account` in through the provider; the client's answer and the PKCE verifier. */
  async function signIn(account: string, jar: CookieJar = new Map()) {
    const { verifier, challenge } = newPkce();
    const back = await s.signIn(provider, account, { challenge, jar });
    return { back, verifier };
  }

  it("keep one login cookie per browser, and two tabs signing in at once both finish", async () => {
    const jar: CookieJar = new Map();
    // A stranger's page starts twenty sign-ins in the visitor's browser.
    for (let i = 0; i < 20; i++) {
      expect((await authorize(authorizeUrl(s.gh, provider, newPkce().challenge), jar)).status).toBe(
        302,
      );
    }
    const ours = jar.get(new URL(s.gh.url).host) as Map<string, string>;
    expect([...ours.keys()]).toEqual(["gatehouse_login"]);
    expect(cookieHeaderOf(jar, new URL(s.gh.url)).length).toBeLessThanOrEqual(4096);

    // Two tabs start a sign-in each, then both finish at the provider and come back.
    const tabs = [newPkce(), newPkce()];
    const starts = [];
    for (const t of tabs) {
      const res = await authorize(authorizeUrl(s.gh, provider, t.challenge), jar);
      starts.push(res.headers.get("location") as string);
    }
    const answers = [];
    for (const start of starts) {
      answers.push(await signInAtIdp(start, "two-tabs", `${s.gh.url}/oauth/idp-callback/`, jar));
    }
    for (const [i, answer] of answers.entries()) {
      const res = await fetch(answer, {
        redirect: "manual",
        headers: { cookie: cookieHeaderOf(jar, answer) },
      });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get("location") as string);
      expect(back.searchParams.get("error_description")).toBeNull();
      const code = back.searchParams.get("code") as string;
      expect((await redeem(s.gh, code, (tabs[i] as { verifier: string }).verifier)).status).toBe(
        200,
      );
      // Each callback takes its own login out of the one cookie and keeps the rest.
      const line = res.headers.getSetCookie()[0] ?? "";
      expect(line).toMatch(/^gatehouse_login=[\w.-]*; Path=\/oauth\/; /);
      const [pair] = line.split(";", 1);
      ours.set("gatehouse_login", (pair as string).slice("gatehouse_login=".length));
      expect([...ours.keys()]).toEqual(["gatehouse_login"]);
    }
  });

  it("finish though forged callbacks came from the same address first", async () => {
    clock += 61_000;
    // A page the person visited made their browser send more forged callbacks than the
    // address may make a minute (GATEHOUSE_OAUTH_RATE_LIMIT, 60): none is counted.
    for (let i = 0; i < 70; i++) {
      const res = await fetch(
        `${s.gh.url}/oauth/idp-callback/${provider}?code=x&state=forged-${i}`,
      );
      expect(res.status).toBe(400);
      await res.arrayBuffer();
    }
    const { back, verifier } = await signIn("after-forgeries");
    const code = back.searchParams.get("code") as string;
    expect(back.searchParams.get("error_description")).toBeNull();
    expect((await redeem(s.gh, code, verifier)).status).toBe(200);
  });

  it("limit sign-ins per provider a minute", async () => {
    clock += 61_000;
    for (const account of ["r1", "r2", "r3"]) {
      const { back } = await signIn(account);
      expect(back.searchParams.get("code")).not.toBeNull();
    }
    const { back } = await signIn("r4");
    expect(back.searchParams.get("error")).toBe("temporarily_unavailable");
    expect(back.searchParams.get("code")).toBeNull();
    expect(await s.gh.store.getIdentity(s.personOf(provider, "r4"))).toBeUndefined();
    clock += 61_000;
    expect((await signIn("r4")).back.searchParams.get("code")).not.toBeNull();
  });

  it("purge the people who never completed a sign-in, and expired sign-in rows", async () => {
    clock += 61_000;
    const purge = createSignInPurge({
      store: s.gh.store,
      now: () => clock,
      log: () => {},
      idlePersonRetentionMs: 30 * 86_400_000,
    });
    const done = await signIn("finished");
    const code = done.back.searchParams.get("code") as string;
    const tokens = (await (await redeem(s.gh, code, done.verifier)).json()) as {
      access_token: string;
    };
    const thrown = ["throw-away-1", "throw-away-2"];
    for (const account of thrown) {
      expect((await signIn(account)).back.searchParams.get("code")).not.toBeNull();
    }
    for (const account of thrown) {
      expect(await s.gh.store.getIdentity(s.personOf(provider, account))).toBeDefined();
    }
    // Within the grace a sign-in has to complete, nobody goes.
    expect((await purge.run()).people).toBe(0);
    clock += 16 * 60_000;
    const report = await purge.run();
    // r1-r4 and both throw-aways never redeemed their codes; two-tabs and finished did.
    expect(report.people).toBe(6);
    expect(report.codes).toBeGreaterThan(0);
    for (const account of [...thrown, "r1", "r4"]) {
      expect(await s.gh.store.getIdentity(s.personOf(provider, account))).toBeUndefined();
    }
    for (const account of ["finished", "two-tabs"]) {
      expect(await s.gh.store.getIdentity(s.personOf(provider, account))).toBeDefined();
    }
    const me = await restCall(s.gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${tokens.access_token}`,
    });
    expect(me.status).toBe(200);
    expect((await purge.run()).people).toBe(0);
  });

  it("purge the people who finished a sign-in but hold nothing, once unseen past the retention", async () => {
    const day = 86_400_000;
    const purge = createSignInPurge({
      store: s.gh.store,
      now: () => clock,
      log: () => {},
      idlePersonRetentionMs: 30 * day,
    });
    const uid = (account: string) => s.personOf(provider, account);
    // two-tabs joined the organization meanwhile: a role binding keeps them.
    await s.gh.store.createRoleBinding({
      uid: newChildUid(s.org.uid),
      groupUid: s.org.uid,
      identityUid: uid("two-tabs"),
      roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
      now: clock,
    });
    // Within the retention (their sessions ended with their refresh tokens), nobody goes.
    clock += 29 * day;
    expect((await purge.run()).idlePeople).toBe(0);
    for (const account of ["finished", "after-forgeries"]) {
      expect(await s.gh.store.getIdentity(uid(account))).toBeDefined();
    }
    clock += 2 * day;
    expect((await purge.run()).idlePeople).toBe(2);
    for (const account of ["finished", "after-forgeries"]) {
      expect(await s.gh.store.getIdentity(uid(account))).toBeUndefined();
    }
    expect(await s.gh.store.getIdentity(uid("two-tabs"))).toBeDefined();
    expect(await s.gh.store.getIdentity(s.org.owner.uid)).toBeDefined();
    // Back the next day, a person is made again by their sign-in.
    const { back, verifier } = await signIn("finished");
    const code = back.searchParams.get("code") as string;
    expect((await redeem(s.gh, code, verifier)).status).toBe(200);
  });
});
