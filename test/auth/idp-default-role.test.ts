import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { cliAuthorizeUrl, cliRedirect, newPkce } from "../helpers/cli-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  backends,
  freePort,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// A provider's default role is granted with its writer's authority, as an invite grants with
// its creator's: a sub-owner who registered a provider granting `owner`, then lost his
// binding, must not keep minting owners by signing in with made-up subjects.

const owner = builtinRoles.find((r) => r.name === "owner")?.uid as string;

let gh: TestServer;
let idp: TestIdp;
let org: TestOrg;
let team: string;
let subOwner: TestCaller;

/** The whole browser flow through provider `uid` as `account`; the callback's redirect. */
async function signIn(uid: string, account: string): Promise<URL> {
  const url = cliAuthorizeUrl(gh.url, newPkce().challenge, { identity_provider: uid });
  const back = await signInAtIdp(url, account, cliRedirect);
  expect(back.searchParams.get("error_description")).toBeNull();
  expect(back.searchParams.get("code")).not.toBeNull();
  return back;
}

/** The role uids `identity` is bound to at the team. */
async function rolesAtTeam(identity: string): Promise<string[]> {
  const res = await restCall(
    gh.url,
    "GET",
    `/iam/v2beta1/roleBindings?uidp.descendants_of=${org.uid}`,
    undefined,
    org.owner.headers,
  );
  expect(res.status).toBe(200);
  return res.json.roleBindings
    .filter(
      (b: { identity: { uid: string }; group: { uid: string } }) =>
        b.identity.uid === identity && b.group.uid === team,
    )
    .map((b: { role: { uid: string } }) => b.role.uid);
}

describe.each(backends)("an identity provider's default role on %s", (backend) => {
  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      // Anyone at all: the subjects are made up by whoever signs in.
      people: Object.fromEntries(
        ["first", "made-up-1", "made-up-2", "after-review"].map((s) => [s, { name: s }]),
      ),
    });
    gh = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      },
      { port, backend },
    );
    org = await gh.makeOrg("acme");
    team = newChildUid(org.uid);
    await gh.store.createGroup({
      uid: team,
      parentUid: org.uid,
      name: "team",
      description: "",
      now: Date.now(),
    });
    subOwner = await gh.makeIdentity(team, ["owner"]);
  });

  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  it("lapses when its writer no longer may grant it, and Get and List say so", async () => {
    const made = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${team}`,
      {
        name: "Team SSO",
        defaultRole: owner,
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
      subOwner.headers,
    );
    expect(made.status).toBe(200);
    expect(made.json.writerUid).toBe(subOwner.uid);
    expect(made.json.defaultRoleGrantable).toBe(true);
    const provider = made.json.uid as string;
    // Each provider has its own redirect URI, registered at it.
    idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${provider}`]);

    // While the writer may grant it, a sign-in gets the role.
    await signIn(provider, "first");
    expect(await rolesAtTeam(providerPersonUid(provider, idp.issuer, "first"))).toEqual([owner]);
    // The grant is in the organization's audit trail, by the person it made an owner.
    const first = providerPersonUid(provider, idp.issuer, "first");
    const grants = await restCall(
      gh.url,
      "GET",
      `/events/v2beta1/events?uidp.descendantsOf=${org.uid}&type=dev.gatehouse.iam.role_binding.created.v1&actor=${first}`,
      undefined,
      org.owner.headers,
    );
    expect(grants.json.events).toMatchObject([
      {
        source: "/oauth/callback",
        data: {
          actor: { uid: first },
          // Not a self-grant: the provider's default role, named.
          reason: "identity_provider_default_role",
          via: { identityProviderUid: provider, identityProviderName: made.json.name },
          // Who was granted which role where, as a review reads it after the fact.
          roleBinding: {
            identity: { uid: first },
            role: { uid: owner, name: "owner" },
            group: { uid: team, name: "team" },
          },
        },
      },
    ]);

    // The organization's owner removes the sub-owner's binding.
    const bindings = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${org.uid}`,
      undefined,
      org.owner.headers,
    );
    const his = bindings.json.roleBindings.find(
      (b: { identity: { uid: string } }) => b.identity.uid === subOwner.uid,
    );
    const removed = await restCall(
      gh.url,
      "DELETE",
      `/iam/v2beta1/roleBindings/${his.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(removed.status).toBe(200);

    // The provider still signs people in, but grants nothing with the lost authority.
    for (const subject of ["made-up-1", "made-up-2"]) {
      await signIn(provider, subject);
      expect(await rolesAtTeam(providerPersonUid(provider, idp.issuer, subject))).toEqual([]);
    }
    const got = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/identityProviders/${provider}`,
      undefined,
      org.owner.headers,
    );
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ writerUid: subOwner.uid, defaultRoleGrantable: false });
    const listed = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/identityProviders?uidp.descendants_of=${org.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(listed.json.identityProviders).toEqual([
      expect.objectContaining({ uid: provider, defaultRoleGrantable: false }),
    ]);

    // The organization's owner saves it again: its authority now grants the role.
    const saved = await restCall(
      gh.url,
      "PATCH",
      `/iam/v2beta1/identityProviders/${provider}?update_mask=description`,
      { uid: provider, description: "re-approved" },
      org.owner.headers,
    );
    expect(saved.status).toBe(200);
    expect(saved.json).toMatchObject({ writerUid: org.owner.uid, defaultRoleGrantable: true });
    await signIn(provider, "after-review");
    expect(await rolesAtTeam(providerPersonUid(provider, idp.issuer, "after-review"))).toEqual([
      owner,
    ]);
  });

  // Owners see their people's sign-ins: through their provider, or of a person holding a role
  // with them; never another organization's, nor its provider.
  it("lists a person's sign-ins to the owners of their organizations only", async () => {
    const provider = (
      await restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/identityProviders/${org.uid}`,
        {
          name: "sessions",
          oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
        },
        org.owner.headers,
      )
    ).json.uid as string;
    idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${provider}`]);
    const other = await gh.makeOrg("elsewhere");
    const third = await gh.makeOrg("unrelated");
    await signIn(provider, "first");
    const person = providerPersonUid(provider, idp.issuer, "first");
    // The person also holds a role in the other organization: its owners see what follows.
    await gh.store.createRoleBinding({
      uid: newChildUid(other.uid),
      groupUid: other.uid,
      identityUid: person,
      roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
      now: Date.now(),
    });
    await signIn(provider, "first");
    const sessions = async (of: TestOrg) =>
      (
        await restCall(
          gh.url,
          "GET",
          `/events/v2beta1/events?type=auth.person,auth.session&actor=${person}&uidp.descendantsOf=${of.uid}`,
          undefined,
          of.owner.headers,
        )
      ).json.events as { type: string; subject: string; data: Record<string, unknown> }[];
    const ours = await sessions(org);
    expect(ours.map((e) => [e.type, e.subject])).toEqual([
      ["dev.gatehouse.auth.person.signed_in.v1", person],
      ["dev.gatehouse.auth.person.signed_in.v1", person],
    ]);
    expect(ours[0]!.data).toMatchObject({
      actor: { uid: person },
      via: { identityProviderUid: provider, identityProviderName: "sessions" },
    });
    // The other organization sees the sign-in made once the person held a role there, without
    // the provider of an organization that is not its own.
    const theirs = await sessions(other);
    expect(theirs.map((e) => e.type)).toEqual(["dev.gatehouse.auth.person.signed_in.v1"]);
    expect(theirs[0]!.data.via).toBeUndefined();
    expect(await sessions(third)).toEqual([]);
    // Without a filter, the unrelated owner's whole trail has nothing of this person.
    const all = await restCall(
      gh.url,
      "GET",
      "/events/v2beta1/events",
      undefined,
      third.owner.headers,
    );
    expect(JSON.stringify(all.json)).not.toContain(person);
  });
});
