import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { cliAuthorizeUrl, cliRedirect, newPkce, redeemCode } from "../helpers/cli-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// An organization's own IdentityProvider logs its people in; another organization's provider
// (a stranger's OpenID Provider claiming the same subjects) reaches nothing of this one.

const viewer = builtinRoles.find((r) => r.name === "viewer")?.uid as string;

let gh: TestServer;
let acme: TestIdp;
let rogue: TestIdp;
let orgA: TestOrg;
let orgB: TestOrg;
let acmeProvider: string;
let rogueProvider: string;

async function createProvider(org: TestOrg, idp: TestIdp, name: string): Promise<string> {
  const res = await restCall(
    gh.url,
    "POST",
    `/iam/v2beta1/identityProviders/${org.uid}`,
    {
      name,
      defaultRole: viewer,
      oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
    },
    org.owner.headers,
  );
  expect(res.status).toBe(200);
  expect(JSON.stringify(res.json)).not.toContain(idp.clientSecret);
  // Each provider has its own redirect URI, registered at it.
  idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${res.json.uid}`]);
  return res.json.uid;
}

/** The whole browser flow through the provider `uid`, as `account`; the API token. */
async function signInThrough(uid: string, account: string): Promise<string> {
  const pkce = newPkce();
  const url = cliAuthorizeUrl(gh.url, pkce.challenge, { identity_provider: uid });
  const back = await signInAtIdp(url, account, cliRedirect);
  const code = back.searchParams.get("code");
  expect(back.searchParams.get("error_description")).toBeNull();
  const res = await redeemCode(gh.url, code as string, pkce.verifier);
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  const port = await freePort();
  const callback = `http://127.0.0.1:${port}/oauth/callback`;
  acme = await startTestIdp({
    redirectUri: callback,
    people: { carol: { name: "Carol", email: "carol@acme.test", email_verified: true } },
  });
  // A stranger's provider that claims to know "carol" too.
  rogue = await startTestIdp({
    redirectUri: callback,
    people: {
      carol: { name: "Carol (not really)", email: "carol@acme.test", email_verified: true },
    },
  });
  // No server-wide login provider: people come in only through organizations' providers.
  gh = await startTestServer(
    {
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
    },
    { port },
  );
  orgA = await gh.makeOrg("acme");
  orgB = await gh.makeOrg("rogue");
  acmeProvider = await createProvider(orgA, acme, "Acme SSO");
  rogueProvider = await createProvider(orgB, rogue, "Rogue SSO");
});

afterAll(async () => {
  await gh?.close();
  await acme?.close();
  await rogue?.close();
});

describe("an organization's identity provider", () => {
  it("signs its people in with the provider's default role at its group", async () => {
    const token = await signInThrough(acmeProvider, "carol");
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, bearer(token));
    expect(me.status).toBe(200);
    expect(me.json.identity.uid).toBe(providerPersonUid(acmeProvider, acme.issuer, "carol"));
    const group = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/groups/${orgA.uid}`,
      undefined,
      bearer(token),
    );
    expect(group.status).toBe(200);
    expect(group.json.name).toBe("acme");
    // A second sign-in finds the same person and the same single binding.
    const again = await signInThrough(acmeProvider, "carol");
    const bindings = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${orgA.uid}`,
      undefined,
      orgA.owner.headers,
    );
    const carols = bindings.json.roleBindings.filter(
      (b: { identity: { uid: string } }) =>
        b.identity.uid === providerPersonUid(acmeProvider, acme.issuer, "carol"),
    );
    expect(carols).toHaveLength(1);
    expect(
      (await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, bearer(again))).status,
    ).toBe(200);
  });

  it("another organization's provider cannot sign anyone into this organization", async () => {
    const token = await signInThrough(rogueProvider, "carol");
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, bearer(token));
    expect(me.json.identity.uid).toBe(providerPersonUid(rogueProvider, rogue.issuer, "carol"));
    expect(me.json.identity.uid).not.toBe(providerPersonUid(acmeProvider, acme.issuer, "carol"));
    const group = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/groups/${orgA.uid}`,
      undefined,
      bearer(token),
    );
    expect(group.status).toBe(403);
  });

  it("an unknown provider uid is refused back at the client, before any sign-in", async () => {
    const res = await fetch(
      cliAuthorizeUrl(gh.url, "a".repeat(43), { identity_provider: "0".repeat(40) }),
      { redirect: "manual" },
    );
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get("location") as string);
    expect(back.searchParams.get("error")).toBe("invalid_request");
    expect(back.searchParams.get("error_description")).toMatch(/no such identity provider/);
  });

  it("without a server-wide login provider, the authorize endpoint says so", async () => {
    const res = await fetch(cliAuthorizeUrl(gh.url, "a".repeat(43)), { redirect: "manual" });
    const back = new URL(res.headers.get("location") as string);
    expect(back.searchParams.get("error_description")).toMatch(/no login provider/);
  });
});
