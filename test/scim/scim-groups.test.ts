import { describe, expect, it } from "vitest";
import { newRootUid } from "../../src/uid.js";
import { backends, type TestOrg, useTestServer } from "../helpers/test-server.js";
import { connectScim } from "./scim-client.js";
import { entra, entraGroups, okta, oktaGroups } from "./scim-fixtures.js";

// SCIM Groups are teams at the organization's root: a member added through SCIM is a member
// of the team at once (if the User is matched to a person and active), one removed is not.
describe.each(backends)("SCIM Groups on %s", (backend) => {
  const gh = useTestServer({}, { backend });

  /** A person who has signed in with this verified email. */
  const person = (email: string) =>
    gh.store.upsertPerson({
      uid: newRootUid(),
      issuer: "https://idp.corp.example",
      subject: email,
      name: email,
      email,
      now: Date.now(),
    });
  const teamMembers = async (org: TestOrg, id: string) =>
    (await gh.store.listTeamMembers(`${org.uid}/${id}`, "", 100)).map((m) => m.identity.uid);

  it("serves Okta's group push: create, lookup, rename, add and remove members, delete", async () => {
    const org = await gh.makeOrg("okta-groups");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    // Okta's userName is an email: the person who signed in with it is matched.
    const someone = await person(`test.user@okta.local`);
    const user = (await scim.send(okta.create())).json.id as string;

    const created = await scim.send(oktaGroups.create());
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect((await gh.store.getTeam(`${org.uid}/${id}`))?.name).toBe("Test SCIMv2");
    const found = await scim.send(oktaGroups.lookup());
    expect(found.json.totalResults).toBe(1);
    expect(found.json.Resources[0].members).toBeUndefined();

    expect((await scim.send(oktaGroups.rename(id))).json.displayName).toBe("Test SCIMv2 Updated");
    const added = await scim.send(oktaGroups.add(id, user));
    expect(added.status).toBe(200);
    expect(added.json.members).toMatchObject([{ value: user, type: "User" }]);
    expect(await teamMembers(org, id)).toEqual([someone.uid]);
    // The User shows its group.
    expect((await scim.send(okta.get(user))).json.groups).toMatchObject([
      { value: id, display: "Test SCIMv2 Updated" },
    ]);

    const removed = await scim.send(oktaGroups.remove(id, user));
    expect(removed.json.members).toEqual([]);
    expect(await teamMembers(org, id)).toEqual([]);

    expect((await scim.send(oktaGroups.delete(id))).status).toBe(204);
    expect(await gh.store.getTeam(`${org.uid}/${id}`)).toBeUndefined();
    expect((await scim.send({ method: "GET", path: `/Groups/${id}` })).status).toBe(404);
  });

  it("serves Entra ID's group operations, and a deprovisioned User leaves every team", async () => {
    const org = await gh.makeOrg("entra-groups");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const created = await scim.send(entraGroups.create());
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect(created.json.externalId).toBe("8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159");
    expect(
      (await scim.send(entraGroups.lookup())).json.Resources.map((g: { id: string }) => g.id),
    ).toEqual([id]);

    const someone = await person("Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com");
    const user = (await scim.send(entra.create())).json.id as string;
    expect((await scim.send(entraGroups.add(id, user))).status).toBe(200);
    expect(await teamMembers(org, id)).toEqual([someone.uid]);
    expect((await scim.send(entraGroups.remove(id, user))).json.members).toEqual([]);
    expect(await teamMembers(org, id)).toEqual([]);
    expect((await scim.send(entraGroups.add(id, user))).status).toBe(200);
    const renamed = await scim.send(entraGroups.rename(id));
    expect(renamed.json.displayName).toBe("1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName");

    // Disabled: out of the team at once, and out of the Group; enabled again: still out.
    expect((await scim.send(entra.disable(user))).json.active).toBe(false);
    expect(await teamMembers(org, id)).toEqual([]);
    expect((await scim.send({ method: "GET", path: `/Groups/${id}` })).json.members).toEqual([]);
    expect((await scim.send(okta.reactivate(user))).json.active).toBe(true);
    expect(await teamMembers(org, id)).toEqual([]);

    expect((await scim.send(entraGroups.delete(id))).status).toBe(204);
  });

  it("refuses a member of another organization, and a second team of the same name", async () => {
    const a = await gh.makeOrg("groups-a");
    const b = await gh.makeOrg("groups-b");
    const scimA = await connectScim(gh, a.uid, a.owner.uid);
    const scimB = await connectScim(gh, b.uid, b.owner.uid);
    const bUser = (await scimB.send(okta.create())).json.id as string;
    const group = (await scimA.send(oktaGroups.create())).json.id as string;
    const refused = await scimA.send(oktaGroups.add(group, bUser));
    expect(refused.status).toBe(400);
    expect(refused.json.scimType).toBe("invalidValue");
    expect(await teamMembers(a, group)).toEqual([]);
    // B's URL does not know A's group.
    expect((await scimB.send({ method: "GET", path: `/Groups/${group}` })).status).toBe(404);
    const twice = await scimA.send(oktaGroups.create());
    expect(twice.status).toBe(409);
    expect(twice.json.scimType).toBe("uniqueness");
  });
});
