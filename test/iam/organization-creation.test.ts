import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallerService } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { cliAuthorizeUrl, cliRedirect, newPkce, redeemCode } from "../helpers/cli-sign-in.js";
import { transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// Who may create an organization is the operator's setting (issue 39 item 6): anyone who
// signs in (the default), people of allowed email domains, or no one but `gatehouse
// bootstrap`; off the default, never a person who came through an organization's provider.

const people = {
  ada: { name: "Ada", email: "ada@example.com", email_verified: true },
  bob: { name: "Bob", email: "bob@elsewhere.test", email_verified: true },
  eve: { name: "Eve", email: "eve@example.com", email_verified: false },
  carol: { name: "Carol", email: "carol@example.com", email_verified: true },
};

describe.each([
  ["allowed-domains", { ada: true, bob: false, eve: false, carol: false }],
  ["bootstrap", { ada: false, bob: false, eve: false, carol: false }],
  ["anyone", { ada: true, bob: true, eve: true, carol: true }],
] as const)("GATEHOUSE_ORGANIZATION_CREATION=%s", (mode, allowed) => {
  let gh: TestServer;
  let idp: TestIdp;
  let provider: string;

  async function tokenOf(account: string, via?: string): Promise<string> {
    const pkce = newPkce();
    const url = cliAuthorizeUrl(gh.url, pkce.challenge, via ? { identity_provider: via } : {});
    const back = await signInAtIdp(url, account, cliRedirect);
    const res = await redeemCode(gh.url, back.searchParams.get("code") ?? "", pkce.verifier);
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  }

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({ redirectUri: `http://127.0.0.1:${port}/oauth/callback`, people });
    gh = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
        GATEHOUSE_ORGANIZATION_CREATION: mode,
        ...(mode === "allowed-domains"
          ? { GATEHOUSE_ORGANIZATION_CREATION_DOMAINS: "Example.com, other.test" }
          : {}),
      },
      { port },
    );
    const org = await gh.makeOrg("acme");
    const made = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      {
        name: "Acme SSO",
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    provider = made.json.uid;
    idp.setRedirectUris([`${gh.url}/oauth/callback`, `${gh.url}/oauth/idp-callback/${provider}`]);
  });

  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  it.each(Object.entries(allowed))("%s may create an organization: %s", async (who, may) => {
    // Carol signs in through the organization's provider; the others through the server's.
    const token = await tokenOf(who, who === "carol" ? provider : undefined);
    const transport = transportFor("connect", gh.url, { authorization: `Bearer ${token}` });
    const caller = await createClient(CallerService, transport).getCaller({});
    expect(caller.mayCreateOrganization).toBe(may);
    const groups = createClient(GroupsService, transport);
    const created = await groups.createGroup({ parent: "", group: { name: `${who}-org` } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (may) {
      expect(created).toBeUndefined();
      expect(caller.organizationCreationRefusal).toBe("");
      return;
    }
    // Over REST too: 403, PERMISSION_DENIED with the reason, and the sentence GetCaller gave.
    const rest = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groups",
      { name: `${who}-org` },
      { authorization: `Bearer ${token}` },
    );
    expect(rest.status).toBe(403);
    expect(rest.json.code).toBe(7);
    expect(rest.json.details[0]).toMatchObject({
      reason: "ORGANIZATION_CREATION_RESTRICTED",
      domain: "iam.gatehouse.test",
    });
    expect(rest.json.message).toContain(caller.organizationCreationRefusal);
    expect(caller.organizationCreationRefusal).not.toBe("");
    expect(String(created)).toContain("permission_denied");
  });
});

describe("the organization creation settings", () => {
  it.each([
    [{ GATEHOUSE_ORGANIZATION_CREATION: "allowed-domains" }, /is required with allowed-domains/],
    [{ GATEHOUSE_ORGANIZATION_CREATION_DOMAINS: "example.com" }, /only with/],
    [{ GATEHOUSE_ORGANIZATION_CREATION: "some" }, /is not one of anyone, allowed-domains/],
    [
      {
        GATEHOUSE_ORGANIZATION_CREATION: "allowed-domains",
        GATEHOUSE_ORGANIZATION_CREATION_DOMAINS: "exa mple.com",
      },
      /not a domain name/,
    ],
  ])("refuses %o", (env, message) => {
    expect(() => loadConfig([], env)).toThrow(ConfigError);
    expect(() => loadConfig([], env)).toThrow(message);
  });
});
