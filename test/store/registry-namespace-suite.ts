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
}
