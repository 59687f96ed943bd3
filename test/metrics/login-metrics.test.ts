import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Exposition, parsePrometheusText, sampleValue } from "../helpers/prometheus-text.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// Logins by outcome at /metrics: each sign-in coming back from the identity provider counts
// once, issued or refused, whatever refused it.

const cliRedirect = "http://127.0.0.1:53682/callback";
let gh: TestServer;
let idp: TestIdp;

beforeAll(async () => {
  const port = await freePort();
  idp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: {
      bob: { email: "bob@example.com", email_verified: false },
      carol: { email: "carol@example.com", email_verified: true },
    },
  });
  gh = await startTestServer(
    {
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_LOGIN_REQUIRE_VERIFIED_EMAIL: "true",
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_METRICS_PORT: "0",
    },
    { port },
  );
});
afterAll(async () => {
  await gh?.close();
  await idp?.close();
});

async function scrape(): Promise<Exposition> {
  const res = await fetch(`http://127.0.0.1:${gh.server.metricsPort}/metrics`);
  return parsePrometheusText(await res.text());
}

const logins = (e: Exposition, outcome: string) =>
  sampleValue(e, "gatehouse_token_requests_total", { kind: "login", outcome });

function authorizeUrl(): string {
  const verifier = randomBytes(32).toString("base64url");
  const q = new URLSearchParams({
    response_type: "code",
    client_id: "gatehouse-cli",
    redirect_uri: cliRedirect,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "s",
  });
  return `${gh.url}/oauth/authorize?${q}`;
}

describe("login metrics", () => {
  it("counts issued and refused sign-ins", async () => {
    const before = await scrape();
    const carol = await signInAtIdp(authorizeUrl(), "carol", cliRedirect);
    expect(carol.searchParams.get("code")).toBeTruthy();
    const bob = await signInAtIdp(authorizeUrl(), "bob", cliRedirect);
    expect(bob.searchParams.get("error")).toBe("access_denied");
    // A callback for no login in flight (made up, or replayed) is refused too.
    const stray = await fetch(`${gh.url}/oauth/callback?state=made-up&code=x`);
    expect(stray.status).toBe(400);
    const after = await scrape();
    expect(logins(after, "issued") - logins(before, "issued")).toBe(1);
    expect(logins(after, "refused") - logins(before, "refused")).toBe(2);
    expect(logins(after, "error") - logins(before, "error")).toBe(0);
  });
});
