import { beforeAll, expect, it } from "vitest";
import { uidsByTime } from "../helpers/list-order.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// An organization's identity provider found by its exact name or a declared email domain, for
// the console's sign-in page: uid, name, the declaring organization's name and whether DNS
// verified the claim, nothing else about the provider; at most ten, at most three of one
// organization, and the earliest claims of a name or domain first.

let a: TestOrg;
let b: TestOrg;
const gh = useTestServer();
beforeAll(async () => {
  a = await gh.makeOrg("alpha");
  b = await gh.makeOrg("bravo");
});

/** When each provider was made (its create_time, RFC 3339): when it claimed its name and domains. */
const claimedAt = new Map<string, string>();

/**
 * `uids` in the lookups' order for claims of equal standing: the oldest claim first, and claims
 * of one millisecond by uid (providers made one after the other can share one).
 */
const byClaim = (uids: string[]) => uidsByTime(uids, claimedAt);

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
  claimedAt.set(res.json.uid, res.json.createTime);
  return res.json.uid as string;
}

type Match = { uid: string; name: string; organization: string; verified: boolean };
type Found = { identityProviders: Match[] };

const lookup = (query: string) => fetch(`${gh.url}/oauth/identity-providers?${query}`);

it("answers the providers of exactly that name, with who declares them, and no more", async () => {
  const alpha = await provider(a, "corp sso");
  const bravo = await provider(b, "corp sso");
  await provider(a, "corp sso 2");
  const res = await lookup("name=corp%20sso");
  expect(res.status).toBe(200);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = (await res.json()) as Found;
  // The oldest claim of the name first; a name is never verified.
  const organization = { [alpha]: "alpha", [bravo]: "bravo" };
  expect(body.identityProviders).toEqual(
    byClaim([alpha, bravo]).map((uid) => ({
      uid,
      name: "corp sso",
      organization: organization[uid],
      verified: false,
    })),
  );
  const text = JSON.stringify(body);
  // Neither its issuer, nor its secret, nor its description.
  for (const hidden of ["sso.example.com", "s3cret-value", "internal-only"]) {
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

it("answers the providers declaring an email's domain, or a domain, and who declares them", async () => {
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
    expect(body, q).toEqual({
      identityProviders: [
        { uid: corp, name: "Alpha login", organization: "alpha", verified: false },
      ],
    });
    // Not the provider's other domain, issuer, secret or description.
    const text = JSON.stringify(body);
    for (const hidden of ["alpha.example", "sso.example.com", "s3cret", "internal-only"]) {
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

it("answers the earliest claims of a domain first, at most three of one organization", async () => {
  const first = await provider(a, "first", ["crowded.example"]);
  // Later declarations of the same domain (from anyone) cannot push the first one out.
  const later: string[] = [];
  for (let i = 0; i < 11; i++) later.push(await provider(b, `later ${i}`, ["crowded.example"]));
  const body = (await (await lookup("domain=crowded.example")).json()) as Found;
  expect(body.identityProviders.map((p) => p.uid)).toEqual(
    byClaim([first, ...byClaim(later).slice(0, 3)]),
  );
});

it("lists the company's own provider whatever older providers of another organization claim", async () => {
  // The squatter's ten providers declare the domain and take the name first; the company's
  // comes later, and is still listed by both lookups.
  const squatter = await gh.makeOrg("squatter");
  const company = await gh.makeOrg("company");
  for (let i = 0; i < 10; i++) await provider(squatter, "company sso", ["company.example"]);
  const real = await provider(company, "company sso", ["company.example"]);
  for (const q of ["domain=company.example", "email=jo%40company.example", "name=company%20sso"]) {
    const found = ((await (await lookup(q)).json()) as Found).identityProviders;
    expect(
      found.filter((p) => p.organization === "squatter"),
      q,
    ).toHaveLength(3);
    expect(
      found.filter((p) => p.organization === "company"),
      q,
    ).toEqual([{ uid: real, name: "company sso", organization: "company", verified: false }]);
  }
});

it("orders an old provider given the domain today by today's claim", async () => {
  const old = await provider(a, "old provider");
  const early = await provider(b, "early claim", ["claimed-early.example"]);
  const res = await restCall(
    gh.url,
    "PATCH",
    `/iam/v2beta1/identityProviders/${old}?update_mask=email_domains`,
    { emailDomains: ["claimed-early.example"] },
    a.owner.headers,
  );
  expect(res.status).toBe(200);
  // Its claim is the update's: after the early one's, or of the same millisecond.
  claimedAt.set(old, res.json.updateTime);
  const found = ((await (await lookup("domain=claimed-early.example")).json()) as Found)
    .identityProviders;
  expect(found.map((p) => p.uid)).toEqual(byClaim([early, old]));
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
