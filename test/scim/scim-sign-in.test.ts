import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { pollOnce } from "../helpers/device-sign-in.js";
import { useProviderSignIn } from "../helpers/provider-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { type CookieJar, cookieHeaderOf, signInAtIdp } from "../helpers/test-idp.js";
import { backends } from "../helpers/test-server.js";
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
  const s = useProviderSignIn({
    backend,
    orgName: "directory-org",
    people: Object.fromEntries(["alice", "bob", "carol", "erin"].map((p) => [p, { name: p }])),
  });
  let scim: ScimClient;
  let provider: string;
  let team: string;

  const api = (method: string, path: string, body?: unknown) => s.api(method, path, body);

  beforeAll(async () => {
    const made = await api("POST", `/iam/v2beta1/teams/${s.org.uid}`, { name: "engineers" });
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    team = made.json.uid;
    const bound = await api("POST", `/iam/v2beta1/roleBindings/${s.org.uid}`, {
      teamUid: team,
      roleUid: editor,
    });
    expect(bound.status, JSON.stringify(bound.json)).toBe(200);
    // The organization's provider: a default role for everyone, and its groups claim's "eng"
    // mapped to the team.
    const idpMade = await s.createProvider(s.org.uid, {
      name: "Corporate SSO",
      defaultRole: viewer,
      oidc: { groupsClaim: "groups" },
      groupMappings: [{ group: "eng", teamUid: team }],
    });
    expect(idpMade.status, JSON.stringify(idpMade.json)).toBe(200);
    provider = idpMade.json.uid;
    scim = await connectScim(s.gh, s.org.uid, s.org.owner.uid);
  });

  /** The whole browser flow through the organization's provider; the redirect it ends at. */
  const signIn = (account: string) => s.signIn(provider, account, { groups: ["eng"] });

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
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${s.org.uid}&identity=${uid}`,
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
      `/events/v2beta1/events?uidp.descendantsOf=${s.org.uid}&type=dev.gatehouse.scim.sign_in.refused.v1&actor=${person}`,
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
    const alice = s.personOf(provider, "alice");
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
    const bob = s.personOf(provider, "bob");
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
    const carol = s.personOf(provider, "carol");
    await provision("carol", false);
    expectRefused(await signIn("carol"), "deactivated");
    // Not even a person record: the sign-in left nothing behind.
    expect(await s.gh.store.identityExists(carol)).toBe(false);
  });

  it("refuses a deactivated person's device sign-in with a page that says why; the device gets no token", async () => {
    await provision("erin", false);
    const started = await fetch(`${s.gh.url}/oauth/device_authorization`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: "gatehouse-cli", identity_provider: provider }),
    });
    expect(started.status).toBe(200);
    const device = (await started.json()) as { device_code: string; user_code: string };
    // The person's browser: the code typed in, then the provider's sign-in.
    const entry = new URL(`${s.gh.url}/oauth/device`);
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
      `${s.gh.url}/oauth/idp-callback/`,
      jar,
    );
    const page = await fetch(callback, { headers: { cookie: cookieHeaderOf(jar, callback) } });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("your organization&#39;s directory has deactivated");
    const poll = await pollOnce(s.gh.url, device.device_code);
    expect(poll.json.access_token).toBeUndefined();
    expect(await s.gh.store.identityExists(s.personOf(provider, "erin"))).toBe(false);
  });

  it("refuses an invite's redemption by a deactivated person until the directory reactivates them", async () => {
    // Dave signs in elsewhere (the login provider) and is matched by his verified email.
    const email = "dave@corp.example";
    const dave = await s.gh.store.upsertPerson({
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
    const token = await s.gh.tokenFor(dave.uid);
    const invite = await api("POST", `/iam/v2beta1/groupInvites/${s.org.uid}`, {
      roleUid: viewer,
      ttl: "3600s",
    });
    expect(invite.status, JSON.stringify(invite.json)).toBe(200);
    const redeemed = await restCall(
      s.gh.url,
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
      s.gh.url,
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
    const fay = await s.gh.store.upsertPerson({
      uid: newRootUid(),
      issuer: "https://users.test",
      subject: "fay",
      name: "Fay",
      email,
      now: Date.now(),
    });
    await s.gh.store.createRoleBinding({
      uid: newChildUid(s.org.uid),
      groupUid: s.org.uid,
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
      s.gh.url,
      "POST",
      `/iam/v2beta1/accessRequests/${s.org.uid}`,
      { roleUid: editor, duration: "3600s", reason: "release week" },
      { authorization: `Bearer ${await s.gh.tokenFor(fay.uid)}` },
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

// An address passes from person to person: a new hire is given a departed person's. Found only
// by that email, a User (or a deleted User's record) the directory matched to another account
// of the same provider is that person's: it neither keeps the new hire out nor lets the departed
// person in. One matched to nobody yet, or to an account elsewhere, still counts.
describe.each(backends)(
  "sign-in by an email the directory gave to someone else on %s",
  (backend) => {
    const shared = "shared@corp.example";
    const people: Record<string, { name: string; email: string; email_verified: boolean }> = {};
    for (const p of ["dan", "nina", "olga", "pia", "quinn"]) {
      people[p] = { name: p, email: `${p}@corp.example`, email_verified: true };
    }
    const s = useProviderSignIn({
      backend,
      people,
      // The provider's word on an email is believed: people are matched by it.
      env: (issuer) => ({ GATEHOUSE_TRUSTED_USER_ISSUERS: issuer }),
    });
    let scim: ScimClient;
    let provider: string;

    beforeAll(async () => {
      const made = await s.createProvider(s.org.uid, { name: "Entra", defaultRole: viewer });
      expect(made.status, JSON.stringify(made.json)).toBe(200);
      provider = made.json.uid;
      scim = await connectScim(s.gh, s.org.uid, s.org.owner.uid);
    });

    /** A User as Entra makes one: its externalId is the directory's object id, not the subject. */
    async function provision(userName: string, email: string, externalId = `obj-${userName}`) {
      const res = await scim.send({
        method: "POST",
        path: "/Users",
        body: {
          schemas: [userSchema],
          userName: `${userName}@corp.example`,
          externalId,
          emails: [{ value: email, type: "work", primary: true }],
          active: true,
        },
      });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json.id as string;
    }

    const roles = async (uid: string) => {
      const res = await s.api(
        "GET",
        `/iam/v2beta1/roleBindings?uidp.descendants_of=${s.org.uid}&identity=${uid}`,
      );
      expect(res.status).toBe(200);
      return (res.json.roleBindings ?? []).map((b: { role: { uid: string } }) => b.role.uid);
    };

    const admitted = (back: URL) => {
      expect(back.searchParams.get("error_description")).toBeNull();
      expect(back.searchParams.get("code")).not.toBeNull();
    };
    const refused = (back: URL, what: string) => {
      expect(back.searchParams.get("code")).toBeNull();
      expect(back.searchParams.get("error_description")).toContain(
        `your organization's directory has ${what} your account`,
      );
    };

    it("lets in a new hire given a deleted person's address; the deleted person stays out", async () => {
      people.dan!.email = shared;
      const id = await provision("dan", shared);
      admitted(await s.signIn(provider, "dan"));
      const dan = s.personOf(provider, "dan");
      expect(await roles(dan)).toEqual([viewer]);
      // Dan leaves: the directory deletes his User, matched to him by the address.
      expect((await scim.send(entra.delete(id))).status).toBe(204);
      refused(await s.signIn(provider, "dan"), "removed");

      // Nina gets the address (the directory has not provisioned her yet): another account of
      // the same provider, so Dan's record is not hers.
      people.nina!.email = shared;
      admitted(await s.signIn(provider, "nina"));
      expect(await roles(s.personOf(provider, "nina"))).toEqual([viewer]);
      refused(await s.signIn(provider, "dan"), "removed");
      expect(await roles(dan)).toEqual([]);
    });

    it("keeps out a deactivated person whose address the directory gave to another, active User", async () => {
      const handed = "handed@corp.example";
      // Olga first signed in at Gatehouse's own login provider with the address; her User is
      // matched to that account, then deactivated.
      const olgaLogin = await s.gh.store.upsertPerson({
        uid: newRootUid(),
        issuer: "https://users.test",
        subject: "olga",
        name: "Olga",
        email: handed,
        now: Date.now(),
      });
      const olgaId = await provision("olga", handed);
      expect((await s.gh.store.getScimUser(s.org.uid, olgaId))?.identityUid).toBe(olgaLogin.uid);
      expect((await scim.send(okta.deactivate(olgaId))).status).toBe(200);

      // Pia gets the address; her User's externalId is her subject at the provider. Olga's
      // account is another User's: Pia's is not matched to it.
      const piaId = await provision("pia", handed, "pia");
      expect((await s.gh.store.getScimUser(s.org.uid, piaId))?.identityUid).toBe("");
      people.pia!.email = handed;
      admitted(await s.signIn(provider, "pia"));
      // The directory's next change to Pia's User matches it to her.
      expect((await scim.send(okta.reactivate(piaId))).status).toBe(200);
      expect((await s.gh.store.getScimUser(s.org.uid, piaId))?.identityUid).toBe(
        s.personOf(provider, "pia"),
      );

      // Olga, through the organization's provider, still says the address is hers: Pia's active
      // User is Pia's, and Olga's own (matched to her login elsewhere: maybe the same person)
      // is inactive.
      people.olga!.email = handed;
      refused(await s.signIn(provider, "olga"), "deactivated");
      expect(await s.gh.store.identityExists(s.personOf(provider, "olga"))).toBe(false);
      admitted(await s.signIn(provider, "pia"));
    });

    it("keeps out whoever comes with the address of a User deleted before anyone used it", async () => {
      // Nobody had the address when the directory deleted its User: whoever comes with it may be
      // the person it stood for, so the record counts.
      const never = "never@corp.example";
      const id = await provision("never", never);
      expect((await scim.send(entra.delete(id))).status).toBe(204);
      people.quinn!.email = never;
      refused(await s.signIn(provider, "quinn"), "removed");
    });
  },
);
