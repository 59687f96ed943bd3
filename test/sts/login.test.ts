import { Code } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/services/sts/exchange.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { type ExchangeResult, stsClients } from "../helpers/sts-clients.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// People log in with a token from a trusted user issuer and no identity: they get (and keep)
// a root identity of their own, and may create organizations.

let ts: TestServer;
let users: OidcIssuer;
let stranger: OidcIssuer;
let login: (token: string) => Promise<ExchangeResult>;

const person = (claims: Record<string, unknown>, i: OidcIssuer = users) =>
  i.issue({ aud: ts.config.baseUrl, ...claims });

function ok(r: ExchangeResult): { token: string; expiry: Date } {
  if (!r.ok) throw new Error(`login refused: ${r.code} ${r.message}`);
  return r;
}

async function api(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${ts.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  users = await startOidcIssuer({ alg: "ES256" });
  stranger = await startOidcIssuer();
  ts = await startTestServer({
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    GATEHOUSE_TRUSTED_USER_ISSUERS: users.url,
  });
  const rest = stsClients(ts.url)["REST GET"]!;
  login = (token) => rest(token, { aud: ts.config.baseUrl });
});
afterAll(async () => {
  await ts?.close();
  await users?.stop();
  await stranger?.stop();
});

describe("user login", () => {
  it("gives a person a root identity, the same one every time", async () => {
    const claims = { sub: "alice", email: "alice@acme.test", email_verified: true, name: "Alice" };
    const first = ok(await login(await person(claims)));
    const sub = decodeJwt(first.token).sub;
    expect(sub).toBe(personUid(users.url, "alice"));
    expect(sub).toMatch(/^[0-9a-f]{40}$/);
    expect(decodeJwt(first.token).email).toBe("alice@acme.test");
    const second = ok(await login(await person(claims)));
    expect(decodeJwt(second.token).sub).toBe(sub);
    expect(await ts.store.getIdentity(sub as string)).toMatchObject({
      name: "Alice",
      email: "alice@acme.test",
      groupUid: "",
    });
  });

  it("keeps an unverified email out of the identity and the token", async () => {
    const res = ok(
      await login(await person({ sub: "bob", email: "bob@acme.test", email_verified: false })),
    );
    expect(decodeJwt(res.token).email).toBeUndefined();
    const sub = decodeJwt(res.token).sub as string;
    expect((await ts.store.getIdentity(sub))?.email).toBe("");
    // A string "true" is not a verified email either.
    const again = ok(
      await login(await person({ sub: "bob", email: "bob@acme.test", email_verified: "true" })),
    );
    expect(decodeJwt(again.token).email).toBeUndefined();
  });

  it.each([
    ["a number", 42],
    ["an array", ["alice", "bob"]],
    ["an object", { id: "alice" }],
    ["empty", ""],
  ])("refuses a sub that is %s with the ordinary 401, not a 500", async (_kind, sub) => {
    const r = await login(await person({ sub }));
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated, status: 401 });
  });

  it("refuses an aud that is not a string or an array of strings", async () => {
    const r = await login(await person({ sub: "dana", aud: [ts.config.baseUrl, 7] }));
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated });
  });

  it("refuses a token from an issuer that is not trusted, without contacting it", async () => {
    const r = await login(await person({ sub: "mallory" }, stranger));
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated, status: 401 });
    expect(stranger.requests).toEqual({ discovery: 0, jwks: 0 });
    expect(await ts.store.getIdentity(personUid(stranger.url, "mallory"))).toBeUndefined();
  });

  it("refuses a trusted issuer's token meant for another audience", async () => {
    const r = await login(await users.issue({ sub: "carol", aud: "some-other-app" }));
    expect(r).toMatchObject({ ok: false, code: Code.Unauthenticated });
  });

  it("lets a person create an organization and own it", async () => {
    const { token } = ok(await login(await person({ sub: "dave" })));
    const org = await api("POST", "/iam/v2beta1/groups", token, { name: "daves-org" });
    expect(org.status).toBe(200);
    const uid = org.json.uid as string;
    expect(uid).toMatch(/^[0-9a-f]{40}$/);
    expect((await api("GET", `/iam/v2beta1/groups/${uid}`, token)).status).toBe(200);
    expect((await api("POST", `/iam/v2beta1/groups/${uid}`, token, { name: "team" })).status).toBe(
      200,
    );
  });
});
