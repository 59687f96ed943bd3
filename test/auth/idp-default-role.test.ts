import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { useProviderSignIn } from "../helpers/provider-sign-in.js";
import { backends, type TestCaller, type TestOrg } from "../helpers/test-server.js";

// A provider's default role is granted with its writer's authority, as an invite grants with
// its creator's: a sub-owner who registered a provider granting `owner`, then lost his
// binding, must not keep minting owners by signing in with made-up subjects.

const owner = builtinRoles.find((r) => r.name === "owner")?.uid as string;

describe.each(backends)("an identity provider's default role on %s", (backend) => {
  const s = useProviderSignIn({
    backend,
    // Anyone at all: the subjects are made up by whoever signs in.
    people: Object.fromEntries(
      ["first", "made-up-1", "made-up-2", "after-review"].map((p) => [p, { name: p }]),
    ),
  });
  let team: string;
  let subOwner: TestCaller;

  /** The whole browser flow through provider `uid` as `account`; the callback's redirect. */
  async function signIn(uid: string, account: string): Promise<URL> {
    const back = await s.signIn(uid, account);
    expect(back.searchParams.get("error_description")).toBeNull();
    expect(back.searchParams.get("code")).not.toBeNull();
    return back;
  }

  /** The role uids `identity` is bound to at the team. */
  async function rolesAtTeam(identity: string): Promise<string[]> {
    const res = await s.api("GET", `/iam/v2beta1/roleBindings?uidp.descendants_of=${s.org.uid}`);
    expect(res.status).toBe(200);
    return res.json.roleBindings
      .filter(
        (b: { identity: { uid: string }; group: { uid: string } }) =>
          b.identity.uid === identity && b.group.uid === team,
      )
      .map((b: { role: { uid: string } }) => b.role.uid);
  }

  beforeAll(async () => {
    team = newChildUid(s.org.uid);
    await s.gh.store.createGroup({
      uid: team,
      parentUid: s.org.uid,
      name: "team",
      description: "",
      now: Date.now(),
    });
    subOwner = await s.gh.makeIdentity(team, ["owner"]);
  });

  it("lapses when its writer no longer may grant it, and Get and List say so", async () => {
    const made = await s.createProvider(team, { name: "Team SSO", defaultRole: owner }, subOwner);
    expect(made.status).toBe(200);
    expect(made.json.writerUid).toBe(subOwner.uid);
    expect(made.json.defaultRoleGrantable).toBe(true);
    const provider = made.json.uid as string;

    // While the writer may grant it, a sign-in gets the role.
    await signIn(provider, "first");
    expect(await rolesAtTeam(s.personOf(provider, "first"))).toEqual([owner]);
    // The grant is in the organization's audit trail, by the person it made an owner.
    const first = s.personOf(provider, "first");
    const grants = await s.api(
      "GET",
      `/events/v2beta1/events?uidp.descendantsOf=${s.org.uid}&type=dev.gatehouse.iam.role_binding.created.v1&actor=${first}`,
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
    const bindings = await s.api(
      "GET",
      `/iam/v2beta1/roleBindings?uidp.descendants_of=${s.org.uid}`,
    );
    const his = bindings.json.roleBindings.find(
      (b: { identity: { uid: string } }) => b.identity.uid === subOwner.uid,
    );
    const removed = await s.api("DELETE", `/iam/v2beta1/roleBindings/${his.uid}`);
    expect(removed.status).toBe(200);

    // The provider still signs people in, but grants nothing with the lost authority.
    for (const subject of ["made-up-1", "made-up-2"]) {
      await signIn(provider, subject);
      expect(await rolesAtTeam(s.personOf(provider, subject))).toEqual([]);
    }
    const got = await s.api("GET", `/iam/v2beta1/identityProviders/${provider}`);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ writerUid: subOwner.uid, defaultRoleGrantable: false });
    const listed = await s.api(
      "GET",
      `/iam/v2beta1/identityProviders?uidp.descendants_of=${s.org.uid}`,
    );
    expect(listed.json.identityProviders).toEqual([
      expect.objectContaining({ uid: provider, defaultRoleGrantable: false }),
    ]);

    // The organization's owner saves it again: its authority now grants the role.
    const saved = await s.api(
      "PATCH",
      `/iam/v2beta1/identityProviders/${provider}?update_mask=description`,
      { uid: provider, description: "re-approved" },
    );
    expect(saved.status).toBe(200);
    expect(saved.json).toMatchObject({ writerUid: s.org.owner.uid, defaultRoleGrantable: true });
    await signIn(provider, "after-review");
    expect(await rolesAtTeam(s.personOf(provider, "after-review"))).toEqual([owner]);
  });

  // Owners see their people's sign-ins: through their provider, or of a person holding a role
  // with them; never another organization's, nor its provider.
  it("lists a person's sign-ins to the owners of their organizations only", async () => {
    const provider = (await s.createProvider(s.org.uid, { name: "sessions" })).json.uid as string;
    const other = await s.gh.makeOrg("elsewhere");
    const third = await s.gh.makeOrg("unrelated");
    await signIn(provider, "first");
    const person = s.personOf(provider, "first");
    // The person also holds a role in the other organization: its owners see what follows.
    await s.gh.store.createRoleBinding({
      uid: newChildUid(other.uid),
      groupUid: other.uid,
      identityUid: person,
      roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
      now: Date.now(),
    });
    await signIn(provider, "first");
    const sessions = async (of: TestOrg) =>
      (
        await s.api(
          "GET",
          `/events/v2beta1/events?type=auth.person,auth.session&actor=${person}&uidp.descendantsOf=${of.uid}`,
          undefined,
          of.owner,
        )
      ).json.events as { type: string; subject: string; data: Record<string, unknown> }[];
    const ours = await sessions(s.org);
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
    const all = await s.api("GET", "/events/v2beta1/events", undefined, third.owner);
    expect(JSON.stringify(all.json)).not.toContain(person);
  });
});
