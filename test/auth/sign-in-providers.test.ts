import { afterAll, beforeAll, expect, it } from "vitest";
import { restCall } from "../helpers/rest-client.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// An organization's identity provider found by its exact name, for the console's sign-in page:
// uid and name only, nothing else about the provider or its organization.

let gh: TestServer;
let a: TestOrg;
let b: TestOrg;
beforeAll(async () => {
  gh = await startTestServer();
  a = await gh.makeOrg("alpha");
  b = await gh.makeOrg("bravo");
});
afterAll(() => gh.close());

async function provider(org: TestOrg, name: string): Promise<string> {
  const res = await restCall(
    gh.url,
    "POST",
    `/iam/v2beta1/identityProviders/${org.uid}`,
    {
      name,
      oidc: { issuer: "https://sso.example.com", clientId: "gh", clientSecret: "s3cret-value" },
    },
    org.owner.headers,
  );
  expect(res.status).toBe(200);
  return res.json.uid as string;
}

const lookup = (query: string) => fetch(`${gh.url}/oauth/identity-providers?${query}`);

it("answers the providers of exactly that name, with their uid and name only", async () => {
  const alpha = await provider(a, "corp sso");
  const bravo = await provider(b, "corp sso");
  await provider(a, "corp sso 2");
  const res = await lookup("name=corp%20sso");
  expect(res.status).toBe(200);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = (await res.json()) as { identityProviders: { uid: string; name: string }[] };
  expect(body.identityProviders.map((p) => p.uid).sort()).toEqual([alpha, bravo].sort());
  for (const p of body.identityProviders) expect(Object.keys(p).sort()).toEqual(["name", "uid"]);
  const text = JSON.stringify(body);
  // Neither its issuer, nor its secret, nor its organization's name.
  for (const hidden of ["sso.example.com", "s3cret-value", "alpha", "bravo"]) {
    expect(text).not.toContain(hidden);
  }
  const none = (await (await lookup("name=corp")).json()) as { identityProviders: unknown[] };
  expect(none.identityProviders).toEqual([]);
});

it("refuses a missing, repeated or overlong name clearly", async () => {
  for (const q of ["", "name=", "name=a&name=b", `name=${"x".repeat(300)}`]) {
    const res = await lookup(q);
    expect(res.status, q).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_request");
  }
});
