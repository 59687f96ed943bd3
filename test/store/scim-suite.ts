import { beforeEach, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import type { ScimUserWrite } from "../../src/store/scim-store.js";
import type { Store } from "../../src/store/store.js";
import { storeError } from "./store-suite.js";

const R = "5".repeat(40);
const OTHER = "6".repeat(40);
const OWNER = "7".repeat(40);
const P = "8".repeat(40);
const editor = builtinRoles.find((r) => r.name === "editor")!;

const user = (id: string, over: Partial<ScimUserWrite> = {}): ScimUserWrite => ({
  orgUid: R,
  id,
  userName: `${id}@corp.example`,
  externalId: `ext-${id}`,
  displayName: id,
  email: `${id}@corp.example`,
  active: true,
  attributes: { userName: `${id}@corp.example` },
  personUids: [],
  now: 10,
  ...over,
});

/**
 * The SCIM part of the store contract (src/store/scim-store.ts): connections by token hash,
 * users and groups of one organization, matching and deprovisioning. Called from
 * runStoreSuite; `store()` is the fresh store of the running test.
 */
export function scimCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.upsertPerson({ uid: OWNER, issuer: "i", subject: "o", name: "O", email: "", now: 1 });
    await s.upsertPerson({
      uid: P,
      issuer: "i",
      subject: "p",
      name: "Pat",
      email: "Pat@Corp.example",
      now: 1,
    });
    for (const uid of [R, OTHER]) {
      await s.createOrganization(
        { uid, name: "acme", description: "", now: 1 },
        { bindingUid: `${uid}/0000000000000001`, identityUid: OWNER, roleUid: ownerRole.uid },
      );
    }
  });

  it("keeps a connection by its token's hash, rotates and revokes it, only for organizations", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "h1", creatorUid: OWNER, now: 5 });
    expect(await s.findScimConnection("h1")).toMatchObject({ orgUid: R, createTime: 5 });
    await s.putScimConnection({ orgUid: R, tokenHash: "h2", creatorUid: OWNER, now: 6 });
    expect(await s.findScimConnection("h1")).toBeUndefined();
    expect((await s.getScimConnection(R))?.createTime).toBe(6);
    await s.touchScimConnection(R, 9);
    expect((await s.findScimConnection("h2"))?.useTime).toBe(9);
    await s.deleteScimConnection(R);
    expect(await s.getScimConnection(R)).toBeUndefined();
    await storeError(() => s.deleteScimConnection(R), "not_found");
    await storeError(
      () =>
        s.putScimConnection({
          orgUid: `${R}/0000000000000009`,
          tokenHash: "h3",
          creatorUid: OWNER,
          now: 1,
        }),
      "failed_precondition",
    );
    await storeError(() => s.createScimUser(user("u1")), "not_found");
  });

  it("keeps users unique by userName without case, narrows, pages and counts them", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    await s.putScimConnection({ orgUid: OTHER, tokenHash: "o", creatorUid: OWNER, now: 1 });
    await s.createScimUser(user("u1"));
    await s.createScimUser(user("u2", { now: 11 }));
    await s.createScimUser(user("u3", { orgUid: OTHER }));
    await storeError(
      () => s.createScimUser(user("u9", { userName: "U1@CORP.example" })),
      "already_exists",
    );
    expect(await s.countScimUsers(R, { by: "all" })).toBe(2);
    expect((await s.listScimUsers(R, { by: "all" }, 1, 1)).map((u) => u.id)).toEqual(["u2"]);
    expect(
      (await s.listScimUsers(R, { by: "userName", value: "U2@corp.EXAMPLE" }, 5, 0)).map(
        (u) => u.id,
      ),
    ).toEqual(["u2"]);
    expect(await s.listScimUsers(R, { by: "externalId", value: "EXT-u1" }, 5, 0)).toEqual([]);
    expect((await s.listScimUsers(R, { by: "email", value: "u1@corp.example" }, 5, 0)).length).toBe(
      1,
    );
    expect(await s.getScimUser(R, "u3")).toBeUndefined();
    const got = await s.getScimUser(OTHER, "u3");
    expect(got).toMatchObject({ version: 1, active: true, identityUid: "" });
    const next = await s.replaceScimUser(
      user("u3", { orgUid: OTHER, displayName: "Three", now: 20 }),
      1,
    );
    expect(next).toMatchObject({
      version: 2,
      displayName: "Three",
      updateTime: 20,
      createTime: 10,
    });
    await storeError(() => s.replaceScimUser(user("u3", { orgUid: OTHER }), 1), "conflict");
    await storeError(() => s.replaceScimUser(user("nobody")), "not_found");
  });

  it("matches a person by a provider's subject first, else by verified email", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    const byEmail = await s.createScimUser(user("pat", { email: "pat@corp.example" }));
    expect(byEmail.identityUid).toBe(P);
    const bySubject = await s.createScimUser(
      user("sub", { email: "", personUids: ["9".repeat(40), OWNER] }),
    );
    expect(bySubject.identityUid).toBe(OWNER);
    expect((await s.createScimUser(user("none", { email: "x@y.z" }))).identityUid).toBe("");
  });

  it("deprovisions: sessions revoked, tokens cut off, bindings and teams in the organization gone, the last owner kept", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    await s.createRoleBinding({
      uid: `${R}/00000000000000b1`,
      groupUid: R,
      identityUid: P,
      roleUid: editor.uid,
      now: 1,
    });
    await s.createRoleBinding({
      uid: `${OTHER}/00000000000000b2`,
      groupUid: OTHER,
      identityUid: P,
      roleUid: editor.uid,
      now: 1,
    });
    await s.createAuthorizationCode({
      codeHash: "c",
      sessionId: "s",
      identityUid: P,
      clientId: "cli",
      redirectUri: "r",
      codeChallenge: "x",
      expireTime: 99,
      now: 1,
    });
    const pat = await s.createScimUser(user("pat", { email: "pat@corp.example" }));
    const group = await s.createScimGroup({
      orgUid: R,
      id: "00000000000000d1",
      displayName: "eng",
      externalId: "",
      memberIds: [pat.id],
      now: 12,
    });
    expect(group.members).toEqual([{ id: "pat", display: "pat" }]);
    expect((await s.listTeamMembers(group.teamUid, "", 10)).map((m) => m.identity.uid)).toEqual([
      P,
    ]);
    expect(await s.scimGroupsOfUser(R, "pat")).toEqual([{ id: "00000000000000d1", name: "eng" }]);
    expect(await s.tokenCutoff(P)).toBe(0);

    await s.replaceScimUser(user("pat", { email: "pat@corp.example", active: false, now: 30 }));
    expect(await s.sessionActive("s")).toBe(false);
    expect(await s.tokenCutoff(P)).toBe(30);
    expect(await s.capabilitiesAt(P, [R])).toEqual(new Set());
    expect((await s.capabilitiesAt(P, [OTHER])).size).toBeGreaterThan(0);
    expect(await s.listTeamMembers(group.teamUid, "", 10)).toEqual([]);
    expect((await s.getScimGroup(R, group.id))?.members).toEqual([]);
    // Updated while inactive: no new cutoff.
    await s.replaceScimUser(user("pat", { email: "pat@corp.example", active: false, now: 40 }));
    expect(await s.tokenCutoff(P)).toBe(30);

    const owner = await s.createScimUser(user("owner", { email: "", personUids: [OWNER] }));
    await storeError(() => s.deleteScimUser(R, owner.id, 50, [OWNER]), "failed_precondition");
    expect(await s.tokenCutoff(OWNER)).toBe(0);
    await s.deleteScimUser(R, "pat", 60, []);
    expect(await s.getScimUser(R, "pat")).toBeUndefined();
  });

  it("keeps groups as teams: renamed, narrowed, members set, deleted with their team", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    await s.createScimUser(user("a"));
    const g = await s.createScimGroup({
      orgUid: R,
      id: "00000000000000e1",
      displayName: "Ops",
      externalId: "x1",
      memberIds: ["a"],
      now: 5,
    });
    await storeError(
      () =>
        s.createScimGroup({
          orgUid: R,
          id: "00000000000000e2",
          displayName: "Ops",
          externalId: "",
          memberIds: [],
          now: 5,
        }),
      "already_exists",
    );
    await storeError(
      () =>
        s.createScimGroup({
          orgUid: R,
          id: "00000000000000e3",
          displayName: "Sec",
          externalId: "",
          memberIds: ["ghost"],
          now: 5,
        }),
      "not_found",
    );
    expect(await s.countScimGroups(R, { by: "displayName", value: "ops" })).toBe(1);
    expect(
      (await s.listScimGroups(R, { by: "externalId", value: "x1" }, 5, 0)).map((x) => x.id),
    ).toEqual([g.id]);
    const renamed = await s.replaceScimGroup(
      { ...g, orgUid: R, displayName: "Platform", memberIds: [], now: 9 },
      g.version,
    );
    expect(renamed).toMatchObject({ displayName: "Platform", members: [], version: 2 });
    expect((await s.getTeam(g.teamUid))?.name).toBe("Platform");
    await s.deleteScimGroup(R, g.id);
    expect(await s.getTeam(g.teamUid)).toBeUndefined();
    await storeError(() => s.deleteScimGroup(R, g.id), "not_found");
  });

  it("puts a person matched after the grouping in the teams of the user's groups", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    // Provisioned and grouped before the person ever signed in: no one to add to the team.
    await s.createScimUser(user("late", { email: "late@corp.example" }));
    const g = await s.createScimGroup({
      orgUid: R,
      id: "00000000000000f1",
      displayName: "Late",
      externalId: "",
      memberIds: ["late"],
      now: 5,
    });
    expect(await s.listTeamMembers(g.teamUid, "", 10)).toEqual([]);
    const L = "9".repeat(40);
    await s.upsertPerson({
      uid: L,
      issuer: "i",
      subject: "l",
      name: "L",
      email: "late@corp.example",
      now: 6,
    });
    const matched = await s.replaceScimUser(user("late", { email: "late@corp.example", now: 7 }));
    expect(matched.identityUid).toBe(L);
    expect((await s.listTeamMembers(g.teamUid, "", 10)).map((m) => m.identity.uid)).toEqual([L]);
  });

  it("says what the directory says of a person, by the strongest key that finds a user", async () => {
    const s = store();
    await s.putScimConnection({ orgUid: R, tokenHash: "r", creatorUid: OWNER, now: 1 });
    const keys = (identityUid: string, externalId: string, email: string) => ({
      identityUid,
      externalId,
      email,
    });
    // Nobody the directory knows: not its to say.
    expect(await s.scimStanding(R, keys(P, "p", "pat@corp.example"))).toBe("unknown");
    // Matched by email to Pat, then deactivated: found by the match, the subject, the email.
    await s.createScimUser(user("pat", { email: "pat@corp.example", externalId: "p" }));
    expect(await s.scimStanding(R, keys(P, "", ""))).toBe("active");
    await s.replaceScimUser(
      user("pat", { email: "pat@corp.example", externalId: "p", active: false }),
    );
    expect(await s.scimStanding(R, keys(P, "", ""))).toBe("inactive");
    expect(await s.scimStanding(R, keys("", "p", ""))).toBe("inactive");
    expect(await s.scimStanding(R, keys("", "", "PAT@corp.example"))).toBe("inactive");
    // Another organization's directory says nothing of Pat.
    expect(await s.scimStanding(OTHER, keys(P, "p", "pat@corp.example"))).toBe("unknown");
    // Deleted: a tombstone keeps what it stood for.
    await s.deleteScimUser(R, "pat", 20, []);
    expect(await s.scimStanding(R, keys(P, "", ""))).toBe("deleted");
    expect(await s.scimStanding(R, keys("", "p", ""))).toBe("deleted");
    // Created again, active: the directory's word now, by every key.
    await s.createScimUser(user("pat2", { email: "pat@corp.example", externalId: "p" }));
    expect(await s.scimStanding(R, keys(P, "p", "pat@corp.example"))).toBe("active");
    // The strongest key decides: an inactive user of the person's subject outweighs an
    // active one found only by the email (a former employee's address given to a new one).
    await s.createScimUser(
      user("x", { email: "shared@corp.example", externalId: "sx", active: false }),
    );
    await s.createScimUser(user("y", { email: "shared@corp.example", externalId: "sy" }));
    expect(await s.scimStanding(R, keys("", "sx", "shared@corp.example"))).toBe("inactive");
    expect(await s.scimStanding(R, keys("", "", "shared@corp.example"))).toBe("active");
  });
}
