import { beforeEach, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { NewAccessRequest } from "../../src/store/access-request-store.js";
import type { Store } from "../../src/store/store.js";
import { listQuery } from "./store-suite.js";

const R = "e".repeat(40);
const G = `${R}/1111111111111111`;
const P = "f".repeat(40);
const editor = builtinRoles.find((r) => r.name === "editor")!;
const hour = 3_600_000;

let next = 0;
/** A fresh child uid of `parent` whose order follows creation order. */
const childOf = (parent: string) => `${parent}/${(++next).toString(16).padStart(16, "0")}`;

/**
 * The access-request part of the store contract; `store()` is the fresh store of the running
 * test. Called from runStoreSuite.
 */
export function accessRequestCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.upsertPerson({ uid: P, issuer: "i", subject: "p", name: "Pat", email: "", now: 1 });
  });

  const ask = (over: Partial<NewAccessRequest> = {}) =>
    store().createAccessRequest({
      uid: childOf(G),
      groupUid: G,
      roleUid: editor.uid,
      requesterUid: P,
      durationMs: 8 * hour,
      reason: "hotfix",
      expirationTime: 1000,
      now: 10,
      ...over,
    });
  const decide = (uid: string, decision: "approved" | "denied", now = 20) =>
    store().decideAccessRequest({
      uid,
      decision,
      reviewerUid: R,
      reason: "ok",
      bindingUid: childOf,
      now,
    });

  it("creates, gets and lists a request with what it names", async () => {
    const made = await ask();
    expect(made).toMatchObject({
      groupUid: G,
      group: { name: "eng" },
      role: { uid: editor.uid, name: "editor" },
      requester: { uid: P, name: "Pat" },
      state: "pending",
      durationMs: 8 * hour,
      reviewerUid: "",
      roleBindingUid: "",
    });
    expect(await store().getAccessRequest(made.uid)).toEqual(made);
    const page = await store().listAccessRequests({
      ...listQuery(),
      filters: { state: "pending", now: 20 },
    });
    expect(page.items.map((r) => r.uid)).toEqual([made.uid]);
    const lapsed = await store().listAccessRequests({
      ...listQuery(),
      filters: { state: "expired", now: 1000 },
    });
    expect(lapsed.items.map((r) => r.uid)).toEqual([made.uid]);
  });

  it("approves once: the binding until now plus the duration, in the same transaction", async () => {
    const made = await ask();
    const out = await decide(made.uid, "approved");
    expect(out.kind).toBe("approved");
    if (out.kind !== "approved") return;
    expect(out.request).toMatchObject({ state: "approved", reviewerUid: R, reviewReason: "ok" });
    expect(out.request.grantExpireTime).toBe(20 + 8 * hour);
    expect(out.binding).toMatchObject({
      uid: out.request.roleBindingUid,
      identityUid: P,
      groupUid: G,
      roleUid: editor.uid,
      expireTime: 20 + 8 * hour,
    });
    expect((await decide(made.uid, "denied")).kind).toBe("not_pending");
    // A second approved request extends the binding it finds, never shortens it.
    const again = await ask({ durationMs: hour });
    const kept = await decide(again.uid, "approved", 30);
    expect(kept.kind === "approved" && kept.binding.expireTime).toBe(20 + 8 * hour);
  });

  it("denies without binding, and refuses to answer a lapsed request", async () => {
    const denied = await decide((await ask()).uid, "denied");
    expect(denied.kind === "denied" && denied.request.state).toBe("denied");
    const old = await ask();
    expect((await decide(old.uid, "approved", 1000)).kind).toBe("not_pending");
    expect((await decide(childOf(G), "approved")).kind).toBe("not_found");
    const bindings = await store().listRoleBindings({ ...listQuery(), filters: { identity: P } });
    expect(bindings.items).toEqual([]);
  });

  it("marks lapsed requests expired once", async () => {
    const old = await ask();
    const fresh = await ask({ expirationTime: 5000 });
    expect(await store().lapsedAccessRequests(1000, 10)).toEqual([old.uid]);
    expect((await store().expireAccessRequest(old.uid, 1000)).kind).toBe("expired");
    expect((await store().expireAccessRequest(old.uid, 1000)).kind).toBe("absent");
    expect((await store().expireAccessRequest(fresh.uid, 1000)).kind).toBe("absent");
    expect((await store().getAccessRequest(old.uid))?.state).toBe("expired");
    expect(await store().lapsedAccessRequests(1000, 10)).toEqual([]);
  });
}
