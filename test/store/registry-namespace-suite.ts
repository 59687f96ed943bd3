import { expect, it } from "vitest";
import { ownerRole } from "../../src/auth/capabilities.js";
import type { Store } from "../../src/store/store.js";
import { storeError } from "./store-suite.js";

const OLD = "3".repeat(40);
const VICTIM = "4".repeat(40);
const THIRD = "5".repeat(40);
const SUB = `${VICTIM}/1111111111111111`;

/**
 * Registry namespaces: an organization holds the namespace of its name from its creation
 * until it is deleted, and no create or rename takes one another organization holds (issue
 * 35, N1). `store()` is the fresh store of the running test. Called from runStoreSuite.
 */
export function registryNamespaceCases(store: () => Store): void {
  const org = (uid: string, name: string, now: number) =>
    store().createGroup({ uid, parentUid: "", name, description: "", now });
  const holder = async (name: string) => (await store().findOrganization(name))?.uid;

  it("refuses to rename an older organization to a name another holds (the capture)", async () => {
    await org(OLD, "attacker", 10);
    await org(VICTIM, "victim", 20);
    expect(await holder("victim")).toBe(VICTIM);
    const err = await storeError(
      () => store().updateGroup(OLD, { name: "victim" }, 30),
      "already_exists",
    );
    expect(err.message).toMatch(/registry namespace "victim" is held by another organization/);
    expect(err.message).not.toContain(VICTIM);
    expect(await store().getGroup(OLD)).toMatchObject({ name: "attacker", updateTime: 10 });
    expect(await holder("victim")).toBe(VICTIM);
  });

  it("keeps a namespace across renames and frees it only when its organization goes", async () => {
    await org(VICTIM, "acme", 10);
    await store().createGroup({
      uid: SUB,
      parentUid: VICTIM,
      name: "team",
      description: "",
      now: 11,
    });
    await org(OLD, "other", 12);
    // A subgroup's name is no namespace, and its rename claims none.
    expect(await holder("team")).toBeUndefined();
    await store().updateGroup(SUB, { name: "globex" }, 13);
    expect(await holder("globex")).toBeUndefined();
    // The rename adds the new name's namespace and keeps the old one: what deployments pull
    // under the old name cannot be taken over by a newcomer.
    await store().updateGroup(VICTIM, { name: "acme-corp" }, 14);
    expect(await holder("acme-corp")).toBe(VICTIM);
    expect(await holder("acme")).toBe(VICTIM);
    await storeError(() => store().updateGroup(OLD, { name: "acme" }, 15), "already_exists");
    // Renaming back to a name it holds is allowed.
    await store().updateGroup(VICTIM, { name: "acme" }, 16);
    expect(await holder("acme")).toBe(VICTIM);
    await store().deleteGroup(SUB);
    await store().deleteGroup(VICTIM);
    expect(await holder("acme")).toBeUndefined();
    expect(await holder("acme-corp")).toBeUndefined();
    await store().updateGroup(OLD, { name: "acme" }, 17);
    expect(await holder("acme")).toBe(OLD);
  });

  it("gives a newcomer of a held name no namespace, until the holder lets it go", async () => {
    await org(VICTIM, "acme", 10);
    await org(OLD, "acme", 20);
    expect(await holder("acme")).toBe(VICTIM);
    // A patch that keeps its name is no rename: accepted, and it takes nothing held.
    expect(await store().updateGroup(OLD, { name: "acme", description: "d" }, 21)).toMatchObject({
      description: "d",
    });
    expect(await holder("acme")).toBe(VICTIM);
    await store().deleteGroup(VICTIM);
    expect(await holder("acme")).toBeUndefined();
    await store().updateGroup(OLD, { name: "acme" }, 22);
    expect(await holder("acme")).toBe(OLD);
  });

  it("lets exactly one of two concurrent renames take a free namespace", async () => {
    await org(OLD, "one", 10);
    await org(VICTIM, "two", 11);
    await org(THIRD, "three", 12);
    const results = await Promise.allSettled([
      store().updateGroup(OLD, { name: "prize" }, 20),
      store().updateGroup(VICTIM, { name: "prize" }, 20),
      store().updateGroup(THIRD, { name: "prize" }, 20),
    ]);
    const won = results.flatMap((r, i) =>
      r.status === "fulfilled" ? [[OLD, VICTIM, THIRD][i]] : [],
    );
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect(r.reason).toMatchObject({ kind: "already_exists" });
    }
    expect(await holder("prize")).toBe(won[0]);
  });

  it("gives a namespace to exactly one of concurrently created organizations of a name", async () => {
    const identity = "6".repeat(40);
    await store().upsertPerson({
      uid: identity,
      issuer: "https://users.test",
      subject: "namespace-person",
      name: "P",
      email: "",
      now: 1,
    });
    const uids = [OLD, VICTIM, THIRD];
    await Promise.all(
      uids.map((uid, i) =>
        store().createOrganization(
          { uid, name: "same", description: "", now: 5 + i },
          {
            bindingUid: `${uid}/00000000000000b${i}`,
            identityUid: identity,
            roleUid: ownerRole.uid,
          },
        ),
      ),
    );
    expect(uids).toContain(await holder("same"));
  });

  it("spells a group's spaces as '-' in registry names, an exact sibling name first", async () => {
    await org(VICTIM, "big corp", 10);
    expect(await holder("big-corp")).toBe(VICTIM);
    expect(await holder("big corp")).toBeUndefined();
    const repo = (uid: string, groupUid: string, name: string) =>
      store().createRepo({ uid, groupUid, name, description: "", aliases: [], now: 11 });
    await store().createGroup({
      uid: SUB,
      parentUid: VICTIM,
      name: "dev team",
      description: "",
      now: 11,
    });
    await repo(`${SUB}/000000000000000a`, SUB, "app");
    expect((await store().resolveRegistryName(["big-corp", "dev-team", "app"]))?.uid).toBe(
      `${SUB}/000000000000000a`,
    );
    expect(await store().resolveRegistryName(["big corp", "dev team", "app"])).toBeUndefined();
    // A sibling named exactly "dev-team" takes the name from the one with a space.
    const exact = `${VICTIM}/2222222222222222`;
    await store().createGroup({
      uid: exact,
      parentUid: VICTIM,
      name: "dev-team",
      description: "",
      now: 12,
    });
    await repo(`${exact}/000000000000000b`, exact, "app");
    expect((await store().resolveRegistryName(["big-corp", "dev-team", "app"]))?.uid).toBe(
      `${exact}/000000000000000b`,
    );
    // A rename onto a name whose dashed namespace another holds is refused.
    await org(OLD, "small corp", 13);
    await storeError(() => store().updateGroup(OLD, { name: "big corp" }, 14), "already_exists");
    await storeError(() => store().updateGroup(OLD, { name: "big-corp" }, 14), "already_exists");
  });

  it("resolves registry names in one query: highest repo first, as deep as groups go", async () => {
    await org(VICTIM, "acme", 10);
    const repo = (uid: string, groupUid: string, name: string) =>
      store().createRepo({ uid, groupUid, name, description: "", aliases: [], now: 11 });
    // acme/team/api is both the organization's repo "team/api" and team's repo "api": the
    // organization's wins; acme/team/web is only team's.
    await store().createGroup({
      uid: SUB,
      parentUid: VICTIM,
      name: "team",
      description: "",
      now: 11,
    });
    await repo(`${VICTIM}/000000000000000a`, VICTIM, "team/api");
    await repo(`${SUB}/000000000000000b`, SUB, "api");
    await repo(`${SUB}/000000000000000c`, SUB, "web");
    let deep = SUB;
    const names = ["acme", "team"];
    for (let i = 0; i < 12; i++) {
      deep = `${deep}/${(0x100 + i).toString(16).padStart(16, "0")}`;
      await store().createGroup({
        uid: deep,
        parentUid: deep.slice(0, -17),
        name: "a",
        description: "",
        now: 12,
      });
      names.push("a");
    }
    await repo(`${deep}/000000000000000d`, deep, "leaf");
    const resolve = async (name: string) =>
      (await store().resolveRegistryName(name.split("/")))?.uid;
    expect(await resolve("acme/team/api")).toBe(`${VICTIM}/000000000000000a`);
    expect(await resolve("acme/team/web")).toBe(`${SUB}/000000000000000c`);
    expect(await resolve([...names, "leaf"].join("/"))).toBe(`${deep}/000000000000000d`);
    expect(await resolve([...names, "nope"].join("/"))).toBeUndefined();
    expect(await resolve("acme/nope/web")).toBeUndefined();
    expect(await resolve("other/team/web")).toBeUndefined();
    expect(await store().resolveRegistryName(["acme"])).toBeUndefined();
    // The namespace, not the name: renamed, the organization answers to both.
    await store().updateGroup(VICTIM, { name: "acme2" }, 13);
    expect(await resolve("acme/team/web")).toBe(`${SUB}/000000000000000c`);
    expect(await resolve("acme2/team/web")).toBe(`${SUB}/000000000000000c`);
  });
}
