import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyRing } from "../../src/auth/keyring.js";
import { personUid } from "../../src/auth/login/person.js";
import type { EventRecord } from "../../src/store/event-store.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { backends, freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// The changes made outside the RPCs, on both backends: a code redeemed, a refresh token
// rotated, a sign-out (by refresh token and by access token), a signing-key rotation. Each
// records one event with its change, and none when nothing changed; none holds a secret.

const cliRedirect = "http://127.0.0.1:53682/callback";

describe.each(backends)("sign-in, sign-out and key events on %s", (backend) => {
  let gh: TestServer;
  let idp: TestIdp;

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: { carol: { name: "Carol", email: "carol@example.com", email_verified: true } },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      },
      { port, backend },
    );
  });
  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  const post = async (path: string, form: Record<string, string>) => {
    const res = await fetch(`${gh.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };

  async function login(account: string) {
    const verifier = randomBytes(32).toString("base64url");
    const q = new URLSearchParams({
      response_type: "code",
      client_id: "gatehouse-cli",
      redirect_uri: cliRedirect,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      state: "s",
    });
    const back = await signInAtIdp(`${gh.url}/oauth/authorize?${q}`, account, cliRedirect);
    const answer = await post("/oauth/token", {
      grant_type: "authorization_code",
      code: back.searchParams.get("code") ?? "",
      code_verifier: verifier,
      redirect_uri: cliRedirect,
      client_id: "gatehouse-cli",
    });
    expect(answer.status).toBe(200);
    return answer.json as { access_token: string; refresh_token: string };
  }

  const eventsAbout = async (subject: string, type: string): Promise<EventRecord[]> =>
    (
      await gh.store.listEvents({
        childrenOf: subject,
        filters: { type },
        order: { field: "create_time", desc: false },
        skip: 0,
        limit: 100,
      })
    ).items;

  /** No token, refresh token or key material in what was recorded. */
  const holdsNoSecret = (events: EventRecord[], secrets: string[]) => {
    const text = JSON.stringify(events);
    for (const secret of secrets) expect(text).not.toContain(secret);
  };

  it("records a code's redemption, a refresh and a sign-out, by and about the person", async () => {
    const carol = personUid(idp.issuer, "carol");
    const first = await login("carol");
    const redeemed = await eventsAbout(carol, "dev.gatehouse.auth.authorization_code.redeemed.v1");
    expect(redeemed).toHaveLength(1);

    const refreshed = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: "gatehouse-cli",
    });
    expect(refreshed.status).toBe(200);
    const rotations = await eventsAbout(carol, "dev.gatehouse.auth.refresh_token.rotated.v1");
    expect(rotations).toHaveLength(1);
    expect(rotations[0]).toMatchObject({ subject: carol, actorUid: carol, source: "/oauth/token" });
    expect(JSON.parse(rotations[0]!.data)).toMatchObject({
      actor: { uid: carol, subject: "carol" },
      protocol: "http",
    });

    // A refused refresh (an unknown token) records nothing.
    const refused = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: "gatehouse_rt_unknown",
      client_id: "gatehouse-cli",
    });
    expect(refused.status).toBe(400);
    expect(await eventsAbout(carol, "dev.gatehouse.auth.refresh_token.rotated.v1")).toHaveLength(1);

    // Sign-out by refresh token: one event; again (the session is gone) none.
    const signedOut = "dev.gatehouse.auth.person.signed_out.v1";
    const token = refreshed.json.refresh_token as string;
    expect((await post("/oauth/revoke", { token })).status).toBe(200);
    expect(await eventsAbout(carol, signedOut)).toHaveLength(1);
    expect((await post("/oauth/revoke", { token })).status).toBe(200);
    expect(await eventsAbout(carol, signedOut)).toHaveLength(1);

    // Sign-out by access token (its session, `sid`): one more; twice changes nothing more.
    const second = await login("carol");
    expect((await post("/oauth/revoke", { token: second.access_token })).status).toBe(200);
    expect((await post("/oauth/revoke", { token: second.access_token })).status).toBe(200);
    const outs = await eventsAbout(carol, signedOut);
    expect(outs).toHaveLength(2);
    expect(outs[1]).toMatchObject({ subject: carol, actorUid: carol, source: "/oauth/revoke" });
    // An unknown token is answered the same, and records nothing.
    expect((await post("/oauth/revoke", { token: "not-a-token" })).status).toBe(200);
    expect(await eventsAbout(carol, signedOut)).toHaveLength(2);

    const all = (
      await gh.store.listEvents({
        childrenOf: carol,
        filters: {},
        order: { field: "create_time", desc: false },
        skip: 0,
        limit: 100,
      })
    ).items;
    holdsNoSecret(all, [
      first.access_token,
      first.refresh_token,
      token,
      second.access_token,
      second.refresh_token,
    ]);
  });

  it("records the revocation of a session whose refresh token is used twice", async () => {
    const carol = personUid(idp.issuer, "carol");
    const revokedType = "dev.gatehouse.auth.session.revoked.v1";
    const before = (await eventsAbout(carol, revokedType)).length;
    const tokens = await login("carol");
    const refresh = (token: string) =>
      post("/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: "gatehouse-cli",
      });
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
    // The spent token again: refused, and the whole session is revoked, recorded as such.
    const replay = await refresh(tokens.refresh_token);
    expect(replay.json.error_description).toMatch(/already used/);
    const revoked = await eventsAbout(carol, revokedType);
    expect(revoked).toHaveLength(before + 1);
    expect(revoked.at(-1)).toMatchObject({ subject: carol, source: "/oauth/token" });
    // Once more: the session is gone, nothing changes, nothing is recorded.
    expect((await refresh(tokens.refresh_token)).status).toBe(400);
    expect(await eventsAbout(carol, revokedType)).toHaveLength(before + 1);
  });

  it("records a signing-key rotation about its kid, by the operator, with no key in it", async () => {
    const ring = createKeyRing({ store: gh.store });
    await ring.ensureKey();
    const before = await gh.store.listSigningKeys();
    const kid = await ring.rotate();
    const rotated = await eventsAbout(kid, "dev.gatehouse.auth.signing_key.rotated.v1");
    expect(rotated).toHaveLength(1);
    expect(rotated[0]).toMatchObject({ subject: kid, actorUid: "" });
    expect(JSON.parse(rotated[0]!.data)).toMatchObject({
      actor: { uid: "" },
      operator: "gatehouse keys rotate",
      protocol: "cli",
    });
    // A pending key made for the registry's trust bundle, then promoted by the next rotation.
    const next = await ring.prepareNext();
    expect(await eventsAbout(next, "dev.gatehouse.auth.signing_key.created.v1")).toHaveLength(1);
    expect(await ring.rotate()).toBe(next);
    expect(await eventsAbout(next, "dev.gatehouse.auth.signing_key.rotated.v1")).toHaveLength(1);
    // The keys that existed before (made at start-up) were recorded by no one.
    for (const k of before) {
      expect(await eventsAbout(k.kid, "dev.gatehouse.auth.signing_key.rotated.v1")).toEqual([]);
      expect(await eventsAbout(k.kid, "dev.gatehouse.auth.signing_key.created.v1")).toEqual([]);
    }
    const keys = await gh.store.listSigningKeys();
    const privateParts = keys.map((k) => (JSON.parse(k.privateJwk) as { d: string }).d);
    holdsNoSecret([...rotated], privateParts);
    holdsNoSecret(
      await eventsAbout(next, "dev.gatehouse.auth.signing_key.rotated.v1"),
      privateParts,
    );
  });
});
