import { beforeEach, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { NewGroupInvite } from "../../src/store/invite-store.js";
import type { Store } from "../../src/store/store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "c".repeat(40);
const G = `${R}/1111111111111111`;
const G2 = `${R}/2222222222222222`;
const I = `${R}/00000000000000a1`;
const P = "d".repeat(40);
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

let next = 0;
/** A fresh child uid of `parent` whose order follows creation order. */
const childOf = (parent: string) => `${parent}/${(++next).toString(16).padStart(16, "0")}`;

/**
 * The group-invite part of the store contract; `store()` is the fresh store of the running
 * test. Called from runStoreSuite.
 */
export function inviteCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.createGroup({ uid: G2, parentUid: R, name: "ops", description: "", now: 1 });
    await s.upsertPerson({ uid: P, issuer: "i", subject: "p", name: "Pat", email: "", now: 1 });
    await s.createIdentity({
      uid: I,
      groupUid: R,
      name: "ci",
      description: "",
      staticKeys: { issuer: "i", subject: "s", issuerKeys: '{"keys":[]}', expirationTime: 9e12 },
      now: 1,
    });
  });

  const invite = (over: Partial<NewGroupInvite> = {}) =>
    store().createGroupInvite({
      uid: childOf(over.groupUid ?? G),
      groupUid: G,
      roleUid: viewer.uid,
      email: "",
      singleUse: false,
      codeHash: `hash-${next}`,
      creatorUid: "",
      expirationTime: 1000,
      now: 10,
      ...over,
    });
  const redeem = (codeHash: string, identityUid = P, email = "", now = 100) =>
    store().redeemGroupInvite({
      codeHash,
      identityUid,
      email,
      now,
      bindingUid: (group) => childOf(group),
    });

  it("creates, reads, finds by hash, updates and deletes an invite", async () => {
    const made = await invite({ codeHash: "h1", email: "a@x.test", singleUse: true });
    expect(made).toMatchObject({
      groupUid: G,
      roleUid: viewer.uid,
      role: { uid: viewer.uid, name: "viewer" },
      email: "a@x.test",
      singleUse: true,
      expirationTime: 1000,
      createTime: 10,
      updateTime: 10,
    });
    expect(made).not.toHaveProperty("codeHash");
    expect(await store().getGroupInvite(made.uid)).toEqual(made);
    expect(await store().findGroupInviteByCode("h1")).toEqual(made);
    expect(await store().findGroupInviteByCode("h2")).toBeUndefined();
    const updated = await store().updateGroupInvite(made.uid, { singleUse: false }, 20);
    expect(updated).toMatchObject({ email: "a@x.test", singleUse: false, updateTime: 20 });
    const moved = await store().updateGroupInvite(made.uid, { email: "", expirationTime: 5 }, 30);
    expect(moved).toMatchObject({ email: "", singleUse: false, expirationTime: 5 });
    await store().deleteGroupInvite(made.uid);
    expect(await store().getGroupInvite(made.uid)).toBeUndefined();
    await storeError(() => store().deleteGroupInvite(made.uid), "not_found");
    await storeError(() => store().updateGroupInvite(made.uid, {}, 1), "not_found");
  });

  it("refuses a missing group or role, a taken uid or hash, a uid outside its group", async () => {
    await storeError(() => invite({ groupUid: `${R}/9999999999999999` }), "not_found");
    await storeError(() => invite({ roleUid: `${R}/9999999999999999` }), "not_found");
    const made = await invite({ codeHash: "taken" });
    await storeError(() => invite({ codeHash: "taken" }), "already_exists");
    await storeError(() => invite({ uid: made.uid }), "already_exists");
    await expect(invite({ uid: childOf(G2) })).rejects.toThrow();
  });

  it("lists by tree filters and scope", async () => {
    const a = await invite({ now: 1 });
    const b = await invite({ groupUid: G2, uid: childOf(G2), roleUid: editor.uid, now: 2 });
    const all = await store().listGroupInvites(listQuery({ descendantsOf: R }));
    expect(all.items.map((i) => i.uid)).toEqual([a.uid, b.uid]);
    const inG = await store().listGroupInvites(listQuery({ childrenOf: G }));
    expect(inG.items.map((i) => i.uid)).toEqual([a.uid]);
    const scoped = await store().listGroupInvites(listQuery({ scope: [G2] }));
    expect(scoped.items.map((i) => i.uid)).toEqual([b.uid]);
    expect((await store().listGroupInvites(listQuery({ scope: [] }))).total).toBe(0);
    const byRole = await store().listGroupInvites(listQuery({ name: "editor" }));
    expect(byRole.items.map((i) => i.uid)).toEqual([b.uid]);
  });

  it("redeems into one hydrated binding, however often", async () => {
    await invite({ codeHash: "multi" });
    const first = await redeem("multi");
    expect(first).toMatchObject({
      kind: "redeemed",
      created: true,
      binding: { groupUid: G, identityUid: P, roleUid: viewer.uid, role: { name: "viewer" } },
    });
    const again = await redeem("multi");
    expect(again).toMatchObject({ kind: "redeemed", created: false });
    if (first.kind !== "redeemed" || again.kind !== "redeemed") throw new Error("unreachable");
    expect(again.binding.uid).toBe(first.binding.uid);
    expect(await store().findGroupInviteByCode("multi")).toBeDefined();
    expect(await redeem("multi", I)).toMatchObject({ kind: "redeemed", created: true });
  });

  it("consumes a single-use invite, also when the binding already existed", async () => {
    await invite({ codeHash: "once", singleUse: true });
    expect(await redeem("once")).toMatchObject({ kind: "redeemed", created: true });
    expect(await redeem("once")).toEqual({ kind: "not_found" });
    expect(await store().findGroupInviteByCode("once")).toBeUndefined();
    await invite({ codeHash: "once-more", singleUse: true });
    expect(await redeem("once-more")).toMatchObject({ kind: "redeemed", created: false });
    expect(await store().findGroupInviteByCode("once-more")).toBeUndefined();
  });

  it("makes a binding held for a while last until revoked, as the invite grants it", async () => {
    await store().createRoleBinding({
      uid: childOf(G),
      groupUid: G,
      identityUid: P,
      roleUid: viewer.uid,
      now: 10,
      expireTime: 10_000_000_000_000,
    });
    await invite({ codeHash: "lasting" });
    const out = await redeem("lasting");
    expect(out).toMatchObject({ kind: "redeemed", created: false });
    const held = await store().listRoleBindings({ ...listQuery(), filters: { identity: P } });
    expect(held.items.map((b) => b.expireTime)).toEqual([undefined]);
  });

  it("gives concurrent redemptions of a single-use code one binding", async () => {
    await invite({ codeHash: "rush", singleUse: true });
    const outcomes = await Promise.all([redeem("rush", P), redeem("rush", I), redeem("rush", P)]);
    expect(outcomes.filter((o) => o.kind === "redeemed")).toHaveLength(1);
  });

  it("refuses an unknown or expired code and a different email, changing nothing", async () => {
    await invite({ codeHash: "old", expirationTime: 100 });
    expect(await redeem("old", P, "", 100)).toEqual({ kind: "not_found" });
    expect(await redeem("nope")).toEqual({ kind: "not_found" });
    await invite({ codeHash: "mail", email: "Pat@X.test", singleUse: true });
    expect(await redeem("mail", P, "")).toEqual({ kind: "email_mismatch" });
    expect(await redeem("mail", P, "other@x.test")).toEqual({ kind: "email_mismatch" });
    expect(await store().findGroupInviteByCode("mail")).toBeDefined();
    const bindings = await store().listRoleBindings({ ...listQuery(), filters: { identity: P } });
    expect(bindings.items).toHaveLength(0);
    expect(await redeem("mail", P, "pat@x.test")).toMatchObject({ kind: "redeemed" });
    await invite({ codeHash: "ghost" });
    await storeError(() => redeem("ghost", `${R}/00000000000000ff`), "not_found");
  });

  it("deletes invites with their group, and with their role", async () => {
    const inG2 = await invite({ groupUid: G2, uid: childOf(G2), codeHash: "g2" });
    await store().deleteGroup(G2);
    expect(await store().getGroupInvite(inG2.uid)).toBeUndefined();
    const role = childOf(R);
    await store().createRole({
      uid: role,
      groupUid: R,
      name: "custom",
      description: "",
      capabilities: ["groups.list"],
      now: 1,
    });
    const ofRole = await invite({ roleUid: role });
    await store().deleteRole(role);
    expect(await store().getGroupInvite(ofRole.uid)).toBeUndefined();
  });
}
