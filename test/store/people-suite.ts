import { expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { PeopleFilters } from "../../src/store/people-store.js";
import type { ListQuery, Store } from "../../src/store/store.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const person = (n: number) => `${n}`.padStart(40, "f");
const hash = (s: string) => s.padEnd(43, "h");

/**
 * The people view's part of the store contract: who the people of a group are, searched and
 * paged, how they came, and their sessions ended on demand. Called from runStoreSuite.
 */
export function peopleCases(store: () => Store): void {
  const org = "0000000000000000";
  const team = `${org}/1111111111111111`;
  const other = "2222222222222222";
  const query = (group: string, extra: Partial<ListQuery<PeopleFilters>> = {}) => ({
    filters: { group, search: "" },
    order: { field: "name" as const, desc: false },
    skip: 0,
    limit: 50,
    ...extra,
  });
  const setUp = async () => {
    const s = store();
    for (const [uid, parentUid, name] of [
      [org, "", "acme"],
      [team, org, "team"],
      [other, "", "other"],
    ] as const) {
      await s.createGroup({ uid, parentUid, name, description: "", now: 1 });
    }
    const names = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger 100%_Dijkstra"];
    for (const [i, name] of names.entries()) {
      await s.upsertPerson({
        uid: person(i),
        issuer: "https://idp.test",
        subject: `s${i}`,
        name,
        email: `${name.split(" ")[0]!.toLowerCase()}@example.com`,
        now: 10 + i,
      });
    }
    // Ada at the organization, Alan in its team, Grace in the other organization only; the
    // last came through a provider of the team and holds nothing.
    const bind = (uid: string, group: string, who: number) =>
      s.createRoleBinding({
        uid,
        groupUid: group,
        identityUid: person(who),
        roleUid: viewer,
        now: 1,
      });
    await bind(`${org}/b000000000000001`, org, 0);
    await bind(`${team}/b000000000000002`, team, 1);
    await bind(`${other}/b000000000000003`, other, 2);
    await s.notePersonOrigin(person(3), {
      kind: "identity_provider",
      groupUid: team,
      sourceUid: `${team}/p000000000000001`,
      createTime: 5,
    });
  };

  it("lists the people of a subtree, never another organization's", async () => {
    await setUp();
    const names = async (group: string, search = "") =>
      (await store().listPeople(query(group, { filters: { group, search } }))).items.map(
        (p) => p.name,
      );
    expect(await names(org)).toEqual(["Ada Lovelace", "Alan Turing", "Edsger 100%_Dijkstra"]);
    expect(await names(team)).toEqual(["Alan Turing", "Edsger 100%_Dijkstra"]);
    expect(await names(other)).toEqual(["Grace Hopper"]);
    // Searched by name or email, case-insensitively; wildcards are text.
    expect(await names(org, "AL")).toEqual(["Alan Turing"]);
    expect(await names(org, "ada@")).toEqual(["Ada Lovelace"]);
    expect(await names(org, "grace")).toEqual([]);
    expect(await names(org, "%_")).toEqual(["Edsger 100%_Dijkstra"]);
    expect(await names(org, "_")).toEqual(["Edsger 100%_Dijkstra"]);
    expect((await store().getPerson(org, person(0)))?.email).toBe("ada@example.com");
    expect(await store().getPerson(org, person(2))).toBeUndefined();
    expect(await store().getPerson(other, person(0))).toBeUndefined();
  });

  it("pages people with a cursor, a count and skip", async () => {
    await setUp();
    const first = await store().listPeople(query(org, { limit: 2 }));
    expect(first).toMatchObject({ total: 3, hasMore: true });
    const last = first.items.at(-1)!;
    const next = await store().listPeople(
      query(org, { limit: 2, after: { value: last.name, uid: last.uid } }),
    );
    expect(next.items.map((p) => p.name)).toEqual(["Edsger 100%_Dijkstra"]);
    expect(next.hasMore).toBe(false);
    const desc = await store().listPeople(
      query(org, { order: { field: "create_time", desc: true }, skip: 1 }),
    );
    expect(desc.items.map((p) => p.name)).toEqual(["Alan Turing", "Ada Lovelace"]);
  });

  it("counts people through their teams once, with the teams the group may name", async () => {
    await setUp();
    const s = store();
    const ops = `${org}/7000000000000001`;
    const idle = `${team}/7000000000000002`;
    await s.createTeam({ uid: ops, groupUid: org, name: "ops", description: "", now: 1 });
    await s.createTeam({ uid: idle, groupUid: team, name: "idle", description: "", now: 1 });
    // Grace (the other organization's) holds viewer at the team group through ops, and is in
    // idle, which holds nothing; Ada is in ops and bound herself; Edsger is in idle.
    await s.createRoleBinding({
      uid: `${team}/b000000000000009`,
      groupUid: team,
      identityUid: "",
      teamUid: ops,
      roleUid: viewer,
      now: 1,
    });
    await s.addTeamMembers(ops, [person(0), person(2)], 2);
    await s.addTeamMembers(idle, [person(3), person(2)], 2);
    const listed = async (group: string) => {
      const page = await s.listPeople(query(group));
      return { total: page.total, people: page.items.map((p) => [p.name, p.teams]) };
    };
    // At the team group Ada is one of its people through ops alone.
    expect(await listed(team)).toEqual({
      total: 4,
      people: [
        ["Ada Lovelace", [{ uid: ops, name: "ops" }]],
        ["Alan Turing", []],
        ["Edsger 100%_Dijkstra", [{ uid: idle, name: "idle" }]],
        [
          "Grace Hopper",
          [
            { uid: idle, name: "idle" },
            { uid: ops, name: "ops" },
          ],
        ],
      ],
    });
    expect(await listed(org)).toEqual({
      total: 4,
      people: [
        ["Ada Lovelace", [{ uid: ops, name: "ops" }]],
        ["Alan Turing", []],
        ["Edsger 100%_Dijkstra", [{ uid: idle, name: "idle" }]],
        [
          "Grace Hopper",
          [
            { uid: idle, name: "idle" },
            { uid: ops, name: "ops" },
          ],
        ],
      ],
    });
    // Out of ops she is still in idle, which lives in the team group; out of both, she is no
    // longer one of the organization's people (she is the other's).
    await s.removeTeamMembers(ops, [person(2)]);
    expect((await s.getPerson(team, person(2)))?.teams).toEqual([{ uid: idle, name: "idle" }]);
    await s.removeTeamMembers(idle, [person(2)]);
    expect(await s.getPerson(org, person(2))).toBeUndefined();
    expect((await listed(org)).total).toBe(3);
  });

  it("records how people came in, first way in per kind", async () => {
    await setUp();
    expect((await store().getPerson(team, person(3)))?.origin).toMatchObject({
      kind: "identity_provider",
      groupUid: team,
    });
    expect((await store().getPerson(org, person(0)))?.origin).toBeUndefined();
    // Gone with the group it was noted at: deleting a group is not blocked by it.
    const gone = `${org}/3333333333333333`;
    await store().createGroup({ uid: gone, parentUid: org, name: "gone", description: "", now: 1 });
    const note = { kind: "invite" as const, groupUid: gone, sourceUid: "x", createTime: 1 };
    await store().notePersonOrigin(person(1), note);
    expect((await store().getPerson(org, person(1)))?.origin?.groupUid).toBe(gone);
    await store().deleteGroup(gone);
    expect((await store().getPerson(org, person(1)))?.origin).toBeUndefined();
    await expect(
      store().notePersonOrigin(person(9), {
        kind: "invite",
        groupUid: org,
        sourceUid: "x",
        createTime: 1,
      }),
    ).rejects.toMatchObject({ kind: "not_found" });
  });

  it("lists a person's live sessions and ends one or all of them", async () => {
    await setUp();
    const s = store();
    for (const [session, expiry] of [
      ["one", 1000],
      ["two", 1000],
      ["old", 50],
    ] as const) {
      await s.createAuthorizationCode({
        codeHash: hash(`c${session}`),
        sessionId: session,
        identityUid: person(0),
        clientId: "cli",
        redirectUri: "http://127.0.0.1/cb",
        codeChallenge: "x",
        expireTime: expiry,
        now: 20,
      });
    }
    await s.redeemAuthorizationCode(hash("cone"), 30, () => undefined, {
      tokenHash: hash("rone"),
      expireTime: 5000,
    });
    const live = await s.listPersonSessions(person(0), 100);
    expect(live.map((x) => x.id).sort()).toEqual(["one", "two"]);
    expect(live.find((x) => x.id === "one")?.expireTime).toBe(5000);
    // Only a person of the group, only a live session.
    await expect(s.revokePersonSessions(other, person(0), "", 100)).rejects.toMatchObject({
      kind: "not_found",
    });
    await expect(s.revokePersonSessions(org, person(0), "old", 100)).rejects.toMatchObject({
      kind: "not_found",
    });
    expect(await s.revokePersonSessions(org, person(0), "one", 100)).toEqual({
      kind: "revoked",
      count: 1,
    });
    expect(await s.sessionActive("one")).toBe(false);
    expect(await s.sessionActive("two")).toBe(true);
    expect(await s.revokePersonSessions(org, person(0), "", 100)).toEqual({
      kind: "revoked",
      count: 1,
    });
    expect(await s.sessionActive("two")).toBe(false);
    expect(await s.revokePersonSessions(org, person(0), "", 100)).toEqual({
      kind: "none",
      count: 0,
    });
    expect(await s.listPersonSessions(person(0), 100)).toEqual([]);
  });
}
