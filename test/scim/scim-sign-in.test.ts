import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { cliAuthorizeUrl, cliRedirect, newPkce } from "../helpers/cli-sign-in.js";
import { pollOnce } from "../helpers/device-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import {
  type CookieJar,
  cookieHeaderOf,
  signInAtIdp,
  startTestIdp,
  type TestIdp,
} from "../helpers/test-idp.js";
import {
  backends,
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";
import { connectScim, type ScimClient } from "./scim-client.js";
import { entra, okta } from "./scim-fixtures.js";

// The directory is the source of truth (issue 39 item 3): a person the organization's SCIM
// connection deactivated or deleted is refused at a sign-in through the organization's identity
// provider (a clear error, an event, nothing granted: no session, no default role, no team),
// and by an invite; reactivation lets them sign in again and gives back nothing by itself.

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const editor = builtinRoles.find((r) => r.name === "editor")!.uid;
const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";

describe.each(backends)("sign-in of a SCIM-deprovisioned person on %s", (backend) => {
  let gh: TestServer;
  let idp: TestIdp;
  let org: TestOrg;
  let scim: ScimClient;
  let provider: string;
  let team: string;

  const api = (method: string, path: string, body?: unknown, headers = org.owner.headers) =>
    restCall(gh.url, method, path, body, headers);

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: Object.fromEntries(["alice", "bob", "carol", "erin"].map((s) => [s, { name: s }])),
    });
    gh = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      },
      { port, backend },
    );
    org = await gh.makeOrg("directory-org");
    const made = await api("POST", `/iam/v2beta1/teams/${org.uid}`, { name: "engineers" });
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    team = made.json.uid;
    const bound = await api("POST", `/iam/v2beta1/roleBindings/${org.uid}`, {
      teamUid: team,
      roleUid: editor,
    });
    expect(bound.status, JSON.stringify(bound.json)).toBe(200);
    // The organization's provider: a default role for everyone, and its groups claim's "eng"
    // mapped to the team.
    const idpMade = await api("POST", `/iam/v2beta1/identityProviders/${org.uid}`, {
      name: "Corporate SSO",
      defaultRole: viewer,
      oidc: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        groupsClaim: "groups",
      },
      groupMappings: [{ group: "eng", teamUid: team }],
    });
    expect(idpMade.status, JSON.stringify(idpMade.json)).toBe(200);
    provider = idpMade.json.uid;
    idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${provider}`]);
    scim = await connectScim(gh, org.uid, org.owner.uid);
  });

  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  /** The whole browser flow through the organization's provider; the redirect it ends at. */
  async function signIn(account: string): Promise<URL> {
    idp.tamperIdToken((c) => ({ ...c, groups: ["eng"] }));
    try {
      const url = cliAuthorizeUrl(gh.url, newPkce().challenge, { identity_provider: provider });
      return await signInAtIdp(url, account, cliRedirect);
    } finally {
      idp.tamperIdToken(undefined);
    }
  }

  /** The SCIM User of the provider's subject `account`. */
  async function provision(account: string, active = true): Promise<string> {
    const res = await scim.send({
      method: "POST",
      path: "/Users",
      body: {
        schemas: [userSchema],
        userName: `${account}@corp.example`,
        externalId: account,
        active,
      },
    });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    return res.json.id;
  }

  /** What the person holds in the organization: role bindings (direct) and teams. */
  async function holds(uid: string) {
    const bindings = await api(
      "GET",
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${org.uid}&identity=${uid}`,
    );
    expect(bindings.status).toBe(200);
    const members = await api("GET", `/iam/v2beta1/teams/${team}:listMembers?pageSize=200`);
    expect(members.status).toBe(200);
    return {
      roles: (bindings.json.roleBindings ?? []).map((b: { role: { uid: string } }) => b.role.uid),
      inTeam: (members.json.members ?? []).some(
        (m: { identity: { uid: string } }) => m.identity.uid === uid,
      ),
    };
  }

  const refusals = async (person: string) => {
    const res = await api(
      "GET",
      `/events/v2beta1/events?uidp.descendantsOf=${org.uid}&type=dev.gatehouse.scim.sign_in.refused.v1&actor=${person}`,
    );
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json.events as { subject: string; data: { reason?: string } }[];
  };

  function expectRefused(back: URL, what: "deactivated" | "removed") {
    expect(back.searchParams.get("code")).toBeNull();
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("error_description")).toContain(
      `your organization's directory has ${what} your account`,
    );
  }

  it("refuses a deactivated person, grants nothing, records it; reactivation restores nothing by itself", async () => {
    const alice = providerPersonUid(provider, idp.issuer, "alice");
    const id = await provision("alice");
    const first = await signIn("alice");
    expect(first.searchParams.get("code")).not.toBeNull();
    expect(await holds(alice)).toEqual({ roles: [viewer], inTeam: true });

    expect((await scim.send(entra.disable(id))).status).toBe(200);
    expect(await holds(alice)).toEqual({ roles: [], inTeam: false });

    // The provider still signs alice in, and its groups claim still says "eng": refused.
    expectRefused(await signIn("alice"), "deactivated");
    expect(await holds(alice)).toEqual({ roles: [], inTeam: false });
    const events = await refusals(alice);
    expect(events).toHaveLength(1);
    expect(events[0]!.subject).toBe(provider);

    // Reactivated: nothing comes back by itself; the next sign-in is a sign-in like a first
    // one, which applies the provider's rules (recorded as such) and nothing else.
    expect((await scim.send(okta.reactivate(id))).json.active).toBe(true);
    expect(await holds(alice)).toEqual({ roles: [], inTeam: false });
    const again = await signIn("alice");
    expect(again.searchParams.get("error_description")).toBeNull();
    expect(again.searchParams.get("code")).not.toBeNull();
    expect(await holds(alice)).toEqual({ roles: [viewer], inTeam: true });
  });

  it("refuses a deleted person until the directory creates them again", async () => {
    const bob = providerPersonUid(provider, idp.issuer, "bob");
    const id = await provision("bob");
    expect((await signIn("bob")).searchParams.get("code")).not.toBeNull();
    expect((await scim.send(entra.delete(id))).status).toBe(204);

    expectRefused(await signIn("bob"), "removed");
    expect(await holds(bob)).toEqual({ roles: [], inTeam: false });
    expect((await refusals(bob)).map((e) => e.data.reason)).toEqual(["scim_deleted"]);

    await provision("bob");
    expect((await signIn("bob")).searchParams.get("code")).not.toBeNull();
  });

  it("refuses a person the directory created inactive, before they ever signed in", async () => {
    const carol = providerPersonUid(provider, idp.issuer, "carol");
    await provision("carol", false);
    expectRefused(await signIn("carol"), "deactivated");
    // Not even a person record: the sign-in left nothing behind.
    expect(await gh.store.identityExists(carol)).toBe(false);
  });

  it("refuses a deactivated person's device sign-in with a page that says why; the device gets no token", async () => {
    await provision("erin", false);
    const started = await fetch(`${gh.url}/oauth/device_authorization`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: "gatehouse-cli", identity_provider: provider }),
    });
    expect(started.status).toBe(200);
    const device = (await started.json()) as { device_code: string; user_code: string };
    // The person's browser: the code typed in, then the provider's sign-in.
    const entry = new URL(`${gh.url}/oauth/device`);
    const typed = await fetch(entry, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ user_code: device.user_code }),
    });
    expect(typed.status).toBe(302);
    const jar: CookieJar = new Map([
      [
        entry.host,
        new Map(
          typed.headers.getSetCookie().map((line) => {
            const [pair = ""] = line.split(";", 1);
            const eq = pair.indexOf("=");
            return [pair.slice(0, eq), pair.slice(eq + 1)] as [string, string];
          }),
        ),
      ],
    ]);
    const callback = await signInAtIdp(
      typed.headers.get("location")!,
      "erin",
      `${gh.url}/oauth/idp-callback/`,
      jar,
    );
    const page = await fetch(callback, { headers: { cookie: cookieHeaderOf(jar, callback) } });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("your organization&#39;s directory has deactivated");
    const poll = await pollOnce(gh.url, device.device_code);
    expect(poll.json.access_token).toBeUndefined();
    expect(await gh.store.identityExists(providerPersonUid(provider, idp.issuer, "erin"))).toBe(
      false,
    );
  });

  it("refuses an invite's redemption by a deactivated person until the directory reactivates them", async () => {
    // Dave signs in elsewhere (the login provider) and is matched by his verified email.
    const email = "dave@corp.example";
    const dave = await gh.store.upsertPerson({
      uid: newRootUid(),
      issuer: "https://users.test",
      subject: "dave",
      name: "Dave",
      email,
      now: Date.now(),
    });
    const res = await scim.send({
      method: "POST",
      path: "/Users",
      body: { schemas: [userSchema], userName: email, emails: [{ value: email }], active: true },
    });
    expect(res.status).toBe(201);
    expect((await scim.send(okta.deactivate(res.json.id))).status).toBe(200);
    // A token of his issued after the cutoff's second (a fresh sign-in elsewhere).
    await sleep(1100);
    const token = await gh.tokenFor(dave.uid);
    const invite = await api("POST", `/iam/v2beta1/groupInvites/${org.uid}`, {
      roleUid: viewer,
      ttl: "3600s",
    });
    expect(invite.status, JSON.stringify(invite.json)).toBe(200);
    const redeemed = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: invite.json.code },
      { authorization: `Bearer ${token}` },
    );
    expect(redeemed.status, JSON.stringify(redeemed.json)).toBe(400);
    expect(redeemed.json.message).toContain("your organization's directory has deactivated");
    expect(await holds(dave.uid)).toEqual({ roles: [], inTeam: false });

    // The directory lets him back: the same invite works (the directory is the way back).
    expect((await scim.send(okta.reactivate(res.json.id))).status).toBe(200);
    const again = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: invite.json.code },
      { authorization: `Bearer ${token}` },
    );
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    expect((await holds(dave.uid)).roles).toEqual([viewer]);
  });

  it("refuses to approve an access request the person filed before the directory deactivated them; denying it works", async () => {
    const email = "fay@corp.example";
    const fay = await gh.store.upsertPerson({
      uid: newRootUid(),
      issuer: "https://users.test",
      subject: "fay",
      name: "Fay",
      email,
      now: Date.now(),
    });
    await gh.store.createRoleBinding({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      identityUid: fay.uid,
      roleUid: viewer,
      now: Date.now(),
    });
    const res = await scim.send({
      method: "POST",
      path: "/Users",
      body: { schemas: [userSchema], userName: email, emails: [{ value: email }], active: true },
    });
    expect(res.status).toBe(201);
    const asked = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/accessRequests/${org.uid}`,
      { roleUid: editor, duration: "3600s", reason: "release week" },
      { authorization: `Bearer ${await gh.tokenFor(fay.uid)}` },
    );
    expect(asked.status, JSON.stringify(asked.json)).toBe(200);
    expect((await scim.send(okta.deactivate(res.json.id))).status).toBe(200);

    const approved = await api("POST", `/iam/v2beta1/accessRequests/${asked.json.uid}:approve`, {});
    expect(approved.status, JSON.stringify(approved.json)).toBe(400);
    expect(approved.json.message).toContain("directory has deactivated this person's account");
    expect(await holds(fay.uid)).toEqual({ roles: [], inTeam: false });
    const denied = await api("POST", `/iam/v2beta1/accessRequests/${asked.json.uid}:deny`, {});
    expect(denied.status, JSON.stringify(denied.json)).toBe(200);
  });
});
