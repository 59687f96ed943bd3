import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/auth/login/person.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { type ExchangeResult, stsClients } from "../helpers/sts-clients.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// The login provider's own ID tokens are not exchanged at /sts/exchange: only a trusted user
// issuer's tokens sign people in there.

let ts: TestServer;
let provider: OidcIssuer;
let exchange: (token: string) => Promise<ExchangeResult>;

beforeAll(async () => {
  provider = await startOidcIssuer({ alg: "ES256" });
  ts = await startTestServer({
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    GATEHOUSE_LOGIN_ISSUER: provider.url,
    GATEHOUSE_LOGIN_CLIENT_ID: "gatehouse-at-provider",
    GATEHOUSE_LOGIN_REQUIRE_VERIFIED_EMAIL: "true",
    // A blank name is no name: people (and discovery) see the issuer's host.
    GATEHOUSE_LOGIN_NAME: " ",
  });
  const rest = stsClients(ts.url)["REST GET"]!;
  exchange = (token) => rest(token, { aud: ts.config.baseUrl });
});
afterAll(async () => {
  await ts?.close();
  await provider?.stop();
});

it("discovery names the login provider by its issuer's host when its name is blank", async () => {
  const res = await fetch(`${ts.url}/.well-known/openid-configuration`);
  const doc = (await res.json()) as { gatehouse_login_provider?: unknown };
  expect(doc.gatehouse_login_provider).toEqual({ name: new URL(provider.url).host });
});

describe("direct exchange of a login provider's ID token", () => {
  const verified = { email: "dana@example.com", email_verified: true };

  // Gatehouse never hands the login provider's ID tokens out: one held by anyone else came from
  // a code of the login provider redeemed elsewhere (a mix-up through a hostile provider), and
  // signs no one in. People sign in through /oauth/authorize.
  it.each([
    [
      "an ID token whose aud is Gatehouse's client ID at the provider",
      { sub: "dana", aud: "gatehouse-at-provider", ...verified },
    ],
    ["another client's ID token", { sub: "dana", aud: "someone-else", ...verified }],
    ["the base URL as aud (the provider is not a trusted user issuer)", { sub: "dana", aud: "" }],
  ])("refuses %s", async (_name, claims) => {
    const aud = claims.aud === "" ? ts.config.baseUrl : claims.aud;
    const r = await exchange(await provider.issue({ ...claims, aud }));
    expect(r.ok).toBe(false);
    expect(await ts.store.getIdentity(personUid(provider.url, "dana"))).toBeUndefined();
  });
});
