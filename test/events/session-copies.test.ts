import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { cliAuthorizeUrl, cliRedirect, newPkce, redeemCode } from "../helpers/cli-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  backends,
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// A person's sign-in, sign-out and session revocation are copied alike to each organization
// whose identity provider the person came through, or where the person holds a role (directly
// or through a team): an owner sees the whole session, not just its start. Another
// organization sees none of it.

const signedIn = "dev.gatehouse.auth.person.signed_in.v1";
const signedOut = "dev.gatehouse.auth.person.signed_out.v1";
const revoked = "dev.gatehouse.auth.session.revoked.v1";

describe.each(backends)("sign-in, sign-out and revocation copies on %s", (backend) => {
  let gh: TestServer;
  let idp: TestIdp;
  let org: TestOrg;
  let provider: string;

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: { dana: { name: "Dana" }, erin: { name: "Erin" } },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      },
      { port, backend },
    );
    org = await gh.makeOrg("acme");
    // No default role: whoever signs in through it holds no role in the organization.
    const made = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      {
        name: "corp",
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    provider = made.json.uid as string;
    idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${provider}`]);
  });
  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  /** Sign `account` in through the organization's provider; the session's tokens. */
  async function signIn(account: string) {
    const pkce = newPkce();
    const url = cliAuthorizeUrl(gh.url, pkce.challenge, { identity_provider: provider });
    const back = await signInAtIdp(url, account, cliRedirect);
    const res = await redeemCode(gh.url, back.searchParams.get("code") ?? "", pkce.verifier);
    expect(res.status).toBe(200);
    return (await res.json()) as { access_token: string; refresh_token: string };
  }

  const post = (path: string, form: Record<string, string>) =>
    fetch(`${gh.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form),
    });

  /** The session events about `person` that `of`'s owner lists, oldest first. */
  const sessions = async (of: TestOrg, person: string) => {
    const res = await restCall(
      gh.url,
      "GET",
      `/events/v2beta1/events?type=auth.person,auth.session&actor=${person}&uidp.descendantsOf=${of.uid}`,
      undefined,
      of.owner.headers,
    );
    expect(res.status).toBe(200);
    return res.json.events as { type: string; subject: string; data: Record<string, unknown> }[];
  };

  it("copies a provider person's sign-out and revoked session, with no role held", async () => {
    const other = await gh.makeOrg("elsewhere");
    const dana = providerPersonUid(provider, idp.issuer, "dana");
    const first = await signIn("dana");
    // Signed out with the refresh token: the organization's owner sees it.
    expect((await post("/oauth/revoke", { token: first.refresh_token })).status).toBe(200);
    // A second session, its refresh token used twice: the session is revoked.
    const second = await signIn("dana");
    const refresh = (token: string) =>
      post("/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: "gatehouse-cli",
      });
    expect((await refresh(second.refresh_token)).status).toBe(200);
    expect((await refresh(second.refresh_token)).status).toBe(400);

    const ours = await sessions(org, dana);
    expect(ours.map((e) => [e.type, e.subject])).toEqual([
      [signedIn, dana],
      [signedOut, dana],
      [signedIn, dana],
      [revoked, dana],
    ]);
    // The sign-in names the provider it went through; the rest say who, and nothing else.
    expect(ours[0]!.data.via).toMatchObject({ identityProviderUid: provider });
    for (const e of ours) expect(e.data.actor).toMatchObject({ uid: dana });
    // Another organization sees nothing of this person, filtered or not.
    expect(await sessions(other, dana)).toEqual([]);
    const all = await restCall(
      gh.url,
      "GET",
      "/events/v2beta1/events",
      undefined,
      other.owner.headers,
    );
    expect(JSON.stringify(all.json)).not.toContain(dana);
  });

  it("copies to an organization where the person holds a role only through a team", async () => {
    const other = await gh.makeOrg("teams-only");
    const erin = providerPersonUid(provider, idp.issuer, "erin");
    await signIn("erin");
    const team = newChildUid(other.uid);
    await gh.store.createTeam({
      uid: team,
      groupUid: other.uid,
      name: "readers",
      description: "",
      now: Date.now(),
    });
    await gh.store.addTeamMembers(team, [erin], Date.now());
    await gh.store.createRoleBinding({
      uid: newChildUid(other.uid),
      groupUid: other.uid,
      identityUid: "",
      teamUid: team,
      roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
      now: Date.now(),
    });
    const tokens = await signIn("erin");
    expect((await post("/oauth/revoke", { token: tokens.access_token })).status).toBe(200);
    // The team's organization sees what followed the grant, without the other's provider.
    const theirs = await sessions(other, erin);
    expect(theirs.map((e) => e.type)).toEqual([signedIn, signedOut]);
    for (const e of theirs) expect(e.data.via).toBeUndefined();
    // The provider's organization sees all of it.
    expect((await sessions(org, erin)).map((e) => e.type)).toEqual([signedIn, signedIn, signedOut]);
  });
});
