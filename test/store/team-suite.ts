import { beforeEach, describe, expect, it } from "vitest";
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

/**
 * The team part of the store contract: teams in groups and their members; `store()` is the
 * fresh store of the running test. Called from runStoreSuite.
 */
export function teamCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
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
    const err = await storeError(() => store().deleteGroup(G), "not_empty");
    expect(err.childKind).toBe("teams");
  });
}
