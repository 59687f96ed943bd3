import { beforeAll, expect, it } from "vitest";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// An organization's identity provider found by its exact name or a declared email domain, for
// the console's sign-in page: uid and name only, nothing else about the provider or its
// organization, at most ten, and the earliest declarations of a domain first.

let a: TestOrg;
let b: TestOrg;
const gh = useTestServer();
beforeAll(async () => {
  a = await gh.makeOrg("alpha");
  b = await gh.makeOrg("bravo");
});

async function provider(org: TestOrg, name: string, emailDomains: string[] = []): Promise<string> {
  const res = await restCall(
    gh.url,
    "POST",
    `/iam/v2beta1/identityProviders/${org.uid}`,
    {
      name,
      emailDomains,
      description: "internal-only description",
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

type Found = { identityProviders: { uid: string; name: string }[] };

it("answers the providers declaring an email's domain, or a domain, uid and name only", async () => {
  const corp = await provider(a, "Alpha login", ["alpha-corp.example", "alpha.example"]);
  const other = await provider(b, "Bravo login", ["bravo.example"]);
  for (const q of [
    "email=jane%40alpha-corp.example",
    "email=Jane.Doe%40ALPHA-Corp.Example",
    "domain=alpha-corp.example",
    "domain=ALPHA-CORP.EXAMPLE",
  ]) {
    const res = await lookup(q);
    expect(res.status, q).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as Found;
    expect(body, q).toEqual({ identityProviders: [{ uid: corp, name: "Alpha login" }] });
    // Not the provider's other domain, issuer, secret, description or organization.
    const text = JSON.stringify(body);
    for (const hidden of [
      "alpha.example",
      "sso.example.com",
      "s3cret",
      "internal-only",
      'alpha"',
    ]) {
      expect(text, q).not.toContain(hidden);
    }
  }
  const bravo = (await (await lookup("email=x%40bravo.example")).json()) as Found;
  expect(bravo.identityProviders.map((p) => p.uid)).toEqual([other]);
  // A subdomain is another domain: no suffix matching.
  for (const q of [
    "email=x%40mail.alpha-corp.example",
    "domain=example",
    "domain=nobody.example",
  ]) {
    const none = await lookup(q);
    expect(none.status, q).toBe(q === "domain=example" ? 400 : 200);
    if (none.status === 200) expect(((await none.json()) as Found).identityProviders).toEqual([]);
  }
});

it("answers at most ten providers for a domain, the earliest declarations first", async () => {
  const first = await provider(a, "first", ["crowded.example"]);
  // Later declarations of the same domain (from anyone) cannot push the first one out.
  const later: string[] = [];
  for (let i = 0; i < 11; i++) later.push(await provider(b, `later ${i}`, ["crowded.example"]));
  const body = (await (await lookup("domain=crowded.example")).json()) as Found;
  expect(body.identityProviders).toHaveLength(10);
  expect(body.identityProviders[0]).toEqual({ uid: first, name: "first" });
  expect(body.identityProviders.slice(1).map((p) => p.uid)).toEqual(later.slice(0, 9));
});

it("refuses a bad, repeated, mixed, unknown or overlong query clearly", async () => {
  for (const q of [
    "email=",
    "email=nobody",
    "email=a%40",
    "email=a%40b",
    "email=a%40b.example&email=c%40d.example",
    "domain=-bad.example",
    "domain=a_b.example",
    "name=x&domain=a.example",
    "domain=a.example&extra=1",
    "other=1",
    `email=a%40${"b".repeat(260)}.example`,
    `domain=${"a".repeat(62)}.${"b".repeat(62)}.${"c".repeat(62)}.${"d".repeat(62)}.example`,
    `domain=a.example&pad=${"x".repeat(3000)}`,
  ]) {
    const res = await lookup(q);
    expect(res.status, q).toBe(400);
    const body = (await res.json()) as { error: string; error_description: string };
    expect(body.error, q).toBe("invalid_request");
    expect(body.error_description.length, q).toBeLessThan(200);
  }
});
