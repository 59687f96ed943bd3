import { beforeEach, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { Store } from "../../src/store/store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "e".repeat(40);
const G = `${R}/1111111111111111`;
const OTHER = "f".repeat(40);
const T1 = `${G}/00000000000000a1`;
const T2 = `${R}/00000000000000a2`;
const P = "1".repeat(40);
const Q = "2".repeat(40);
const I = `${R}/00000000000000c1`;
const editor = builtinRoles.find((r) => r.name === "editor")!;
const H = `${G}/2222222222222222`;

/**
 * The team part of the store contract: teams in groups and their members; `store()` is the
 * fresh store of the running test. Called from runStoreSuite.
 */
export function teamCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.createGroup({ uid: H, parentUid: G, name: "api", description: "", now: 1 });
    await s.createGroup({ uid: OTHER, parentUid: "", name: "other", description: "", now: 1 });
    await s.upsertPerson({ uid: P, issuer: "i", subject: "p", name: "Pat", email: "", now: 1 });
    await s.upsertPerson({ uid: Q, issuer: "i", subject: "q", name: "Quinn", email: "", now: 1 });
    await s.createIdentity({
      uid: I,
      groupUid: R,
      name: "ci",
      description: "",
      staticKeys: { issuer: "i", subject: "s", issuerKeys: '{"keys":[]}', expirationTime: 9e12 },
      now: 1,
    });
  });

  const team = (uid: string, groupUid: string, name: string, now = 10) =>
    store().createTeam({ uid, groupUid, name, description: "", now });

  it("creates, reads, renames and deletes a team", async () => {
    const created = await team(T1, G, "platform");
    expect(created).toEqual({
      uid: T1,
      groupUid: G,
      name: "platform",
      description: "",
      memberCount: 0,
      createTime: 10,
      updateTime: 10,
    });
    expect(await store().getTeam(T1)).toEqual(created);
    const renamed = await store().updateTeam(T1, { name: "infra", description: "d" }, 20);
    expect(renamed).toMatchObject({ name: "infra", description: "d", updateTime: 20 });
    expect(await store().updateTeam(T1, {}, 30)).toEqual(renamed);
    expect(await store().deleteTeam(T1)).toEqual(renamed);
    expect(await store().getTeam(T1)).toBeUndefined();
    await storeError(() => store().deleteTeam(T1), "not_found");
    await storeError(() => store().updateTeam(T1, { name: "x" }, 40), "not_found");
  });

  it("refuses a second team of one name in a group, a missing group, a taken uid", async () => {
    await team(T1, G, "platform");
    await storeError(() => team(`${G}/00000000000000a3`, G, "platform"), "already_exists");
    await storeError(() => team(T1, G, "other"), "already_exists");
    await storeError(
      () => team(`${OTHER}/9999999999999999/00000000000000a4`, `${OTHER}/9999999999999999`, "x"),
      "not_found",
    );
    // Another group may use the name.
    await team(T2, R, "platform");
    await team(`${G}/00000000000000a5`, G, "infra");
    await storeError(() => store().updateTeam(T1, { name: "infra" }, 5), "already_exists");
  });

  it("adds, lists and removes members, counting them", async () => {
    await team(T1, G, "platform");
    expect(await store().addTeamMembers(T1, [P, I], 50)).toEqual([P, I]);
    expect(await store().addTeamMembers(T1, [P, Q], 60)).toEqual([Q]);
    expect(await store().getTeam(T1)).toMatchObject({ memberCount: 3, updateTime: 60 });
    const members = await store().listTeamMembers(T1, "", 10);
    expect(members.map((m) => m.identity.uid)).toEqual([P, Q, I].sort());
    expect(members[0]).toEqual({
      teamUid: T1,
      identity: { uid: P, name: "Pat", description: "", subject: "p", issuer: "i" },
      createTime: 50,
    });
    const firstTwo = await store().listTeamMembers(T1, "", 2);
    const rest = await store().listTeamMembers(T1, firstTwo[1]!.identity.uid, 2);
    expect([...firstTwo, ...rest].map((m) => m.identity.uid)).toEqual([P, Q, I].sort());
    expect(await store().removeTeamMembers(T1, [Q, "3".repeat(40)])).toEqual([Q]);
    expect(await store().getTeam(T1)).toMatchObject({ memberCount: 2 });
  });

  it("adds no member when one identity is missing, and refuses a missing team", async () => {
    await team(T1, G, "platform");
    await storeError(() => store().addTeamMembers(T1, [P, "9".repeat(40)], 5), "not_found");
    expect(await store().getTeam(T1)).toMatchObject({ memberCount: 0 });
    await storeError(() => store().addTeamMembers(T2, [P], 5), "not_found");
    await storeError(() => store().removeTeamMembers(T2, [P]), "not_found");
    await storeError(() => store().listTeamMembers(T2, "", 5), "not_found");
  });

  it("finds an identity's teams under a group, and drops members with the team or identity", async () => {
    await team(T1, G, "platform");
    await team(T2, R, "all");
    await store().addTeamMembers(T1, [P, I], 5);
    await store().addTeamMembers(T2, [P, I], 5);
    expect((await store().teamsOfIdentity(P, R)).map((t) => t.uid)).toEqual([T2, T1].sort());
    expect((await store().teamsOfIdentity(P, G)).map((t) => t.uid)).toEqual([T1]);
    expect(await store().teamsOfIdentity(P, OTHER)).toEqual([]);
    expect((await store().teamsOfIdentity(P, "")).length).toBe(2);
    await store().deleteIdentity(I);
    expect(await store().getTeam(T1)).toMatchObject({ memberCount: 1 });
    await store().deleteTeam(T1);
    expect((await store().teamsOfIdentity(P, R)).map((t) => t.uid)).toEqual([T2]);
  });

  it("lists teams by tree and name, and a team blocks its group's delete", async () => {
    await team(T1, G, "platform");
    await team(T2, R, "all");
    const under = await store().listTeams(listQuery({ descendantsOf: G }));
    expect(under.items.map((t) => t.uid)).toEqual([T1]);
    const all = await store().listTeams(listQuery({ descendantsOf: R }));
    expect(all.items.map((t) => t.name)).toEqual(["all", "platform"]);
    const named = await store().listTeams(listQuery({ name: "all" }));
    expect(named.items.map((t) => t.uid)).toEqual([T2]);
    await store().deleteGroup(H);
    const err = await storeError(() => store().deleteGroup(G), "not_empty");
    expect(err.childKind).toBe("teams");
  });

  describe("role bindings to teams", () => {
    const bindTeam = (uid: string, groupUid: string, teamUid: string, roleUid = editor.uid) =>
      store().createRoleBinding({ uid, groupUid, identityUid: "", teamUid, roleUid, now: 7 });
    const B = `${G}/00000000000000b1`;

    it("binds a role to a team, hydrated, once, and lists it by team", async () => {
      await team(T1, G, "platform");
      const b = await bindTeam(B, G, T1);
      expect(b).toMatchObject({
        uid: B,
        groupUid: G,
        identityUid: "",
        teamUid: T1,
        roleUid: editor.uid,
        team: { uid: T1, name: "platform", description: "" },
        identity: { uid: "", name: "" },
      });
      expect(await store().getRoleBinding(B)).toEqual(b);
      await storeError(() => bindTeam(`${G}/00000000000000b2`, G, T1), "already_exists");
      await storeError(() => bindTeam(`${G}/00000000000000b3`, G, T2), "not_found");
      const listed = await store().listRoleBindings({ ...listQuery(), filters: { team: T1 } });
      expect(listed.items.map((x) => x.uid)).toEqual([B]);
      const byIdentity = await store().listRoleBindings({
        ...listQuery(),
        filters: { identity: P },
      });
      expect(byIdentity.items).toEqual([]);
    });

    it("gives a team's members what the team holds, down the tree, and takes it back at once", async () => {
      await team(T1, G, "platform");
      await bindTeam(B, G, T1);
      const s = store();
      // Asked before each change, so that a cached answer would show.
      expect((await s.capabilitiesAt(P, [R, G, H])).has("repo.create")).toBe(false);
      await s.addTeamMembers(T1, [P], 8);
      expect((await s.capabilitiesAt(P, [R, G, H])).has("repo.create")).toBe(true);
      expect((await s.capabilitiesAt(P, [R])).has("repo.create")).toBe(false);
      expect(await s.groupsWithCapability(P, "repo.create")).toEqual([G]);
      expect((await s.capabilitiesAt(Q, [R, G, H])).has("repo.create")).toBe(false);
      await s.removeTeamMembers(T1, [P]);
      expect((await s.capabilitiesAt(P, [R, G, H])).has("repo.create")).toBe(false);
      expect(await s.groupsWithCapability(P, "repo.create")).toEqual([]);
      await s.addTeamMembers(T1, [P], 9);
      expect((await s.capabilitiesAt(P, [R, G])).has("repo.create")).toBe(true);
      await s.deleteTeam(T1);
      expect((await s.capabilitiesAt(P, [R, G])).has("repo.create")).toBe(false);
      expect(await s.getRoleBinding(B)).toBeUndefined();
    });

    it("holds a team's owner binding for no owner: the last identity owner stays", async () => {
      const owner = builtinRoles.find((r) => r.name === "owner")!;
      const ownerBinding = `${R}/00000000000000d1`;
      await store().createRoleBinding({
        uid: ownerBinding,
        groupUid: R,
        identityUid: P,
        roleUid: owner.uid,
        now: 1,
      });
      await team(T2, R, "owners");
      await store().addTeamMembers(T2, [Q], 2);
      await bindTeam(`${R}/00000000000000d2`, R, T2, owner.uid);
      await storeError(() => store().deleteRoleBinding(ownerBinding), "failed_precondition");
      await store().deleteRoleBinding(`${R}/00000000000000d2`);
    });
  });
}
