import { beforeEach, expect, it } from "vitest";
import { type AuditScope, auditScope } from "../../src/events/audit-scope.js";
import type { Store } from "../../src/store/store.js";
import type { NewSubscription } from "../../src/store/subscription-store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "e".repeat(40);
const G = `${R}/1111111111111111`;
const G2 = `${R}/2222222222222222`;
const Other = "f".repeat(40);
const created = "dev.gatehouse.iam.group.created.v1";

let next = 0;
const childOf = (parent: string) => `${parent}/${(++next).toString(16).padStart(16, "0")}`;

/** Run `fn` as a mutating RPC would: its first change writes the call's event (and fan-out). */
function asCall<R>(type: string, fn: () => Promise<R>): Promise<R> {
  const scope: AuditScope = {
    type,
    source: "/test",
    actorUid: "someone",
    requestId: "r",
    protocol: "grpc",
    requestUid: "",
    recorded: false,
  };
  return auditScope.run(scope, fn);
}

/**
 * The webhook subscription part of the store contract, and its outbox: deliveries written
 * with their event, claimed under a lease, finished once. Called from runStoreSuite.
 */
export function subscriptionCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.createGroup({ uid: G2, parentUid: R, name: "ops", description: "", now: 1 });
    await s.createGroup({ uid: Other, parentUid: "", name: "other", description: "", now: 1 });
  });

  const sub = (over: Partial<NewSubscription> = {}): NewSubscription => ({
    uid: childOf(over.groupUid ?? G),
    groupUid: G,
    name: `hook ${next}`,
    description: "",
    sink: "https://hooks.example.com/x",
    eventTypes: [created],
    secret: "whsec_test",
    now: 10,
    ...over,
  });

  it("creates, gets, updates, lists and deletes, never showing the secret", async () => {
    const s = store();
    const made = await s.createSubscription(sub({ name: "a" }));
    expect(made).toMatchObject({ groupUid: G, name: "a", eventTypes: [created], createTime: 10 });
    expect(made.delivery).toEqual({
      pendingCount: 0,
      deliveredCount: 0,
      failedAttempts: 0,
      abandonedCount: 0,
      lastAttemptTime: 0,
      lastSuccessTime: 0,
      lastStatus: 0,
      lastError: "",
    });
    expect(JSON.stringify(made)).not.toContain("whsec_test");
    expect(await s.getSubscription(made.uid)).toEqual(made);
    const changed = await s.updateSubscription(made.uid, { eventTypes: ["x", "y"] }, 20);
    expect(changed).toMatchObject({ name: "a", eventTypes: ["x", "y"], updateTime: 20 });
    expect(await s.updateSubscription(made.uid, {}, 30)).toEqual(changed);
    await s.createSubscription(sub({ groupUid: G2, uid: childOf(G2), name: "a" }));
    const page = await s.listSubscriptions(listQuery({ childrenOf: G }));
    expect(page.items.map((x) => x.uid)).toEqual([made.uid]);
    expect((await s.listSubscriptions(listQuery({ descendantsOf: R }))).total).toBe(2);
    // Counted per organization, in all its groups.
    expect(await s.getSubscriptionCount(R)).toBe(2);
    expect(await s.getSubscriptionCount(Other)).toBe(0);
    await s.deleteSubscription(made.uid);
    expect(await s.getSubscription(made.uid)).toBeUndefined();
    await storeError(() => s.deleteSubscription(made.uid), "not_found");
    await storeError(() => s.updateSubscription(made.uid, { name: "b" }, 1), "not_found");
  });

  it("refuses a taken name in the group and a missing group", async () => {
    const s = store();
    await s.createSubscription(sub({ name: "same" }));
    await storeError(() => s.createSubscription(sub({ name: "same" })), "already_exists");
    const missing = `${R}/9999999999999999`;
    await storeError(
      () => s.createSubscription(sub({ groupUid: missing, uid: childOf(missing) })),
      "not_found",
    );
  });

  it("writes deliveries with the event, for the subjects at or below the group and its types", async () => {
    const s = store();
    const hook = await s.createSubscription(sub());
    const above = await s.createSubscription(sub({ groupUid: R, uid: childOf(R) }));
    const otherType = await s.createSubscription(sub({ eventTypes: ["dev.gatehouse.x.y.z.v1"] }));
    // A group under G: both G's and R's subscriptions of the type get it.
    await asCall(created, () =>
      s.createGroup({ uid: childOf(G), parentUid: G, name: "below", description: "", now: 5 }),
    );
    // A group under G2: only R's.
    await asCall(created, () =>
      s.createGroup({ uid: childOf(G2), parentUid: G2, name: "aside", description: "", now: 5 }),
    );
    // Another organization: none.
    await asCall(created, () =>
      s.createGroup({ uid: childOf(Other), parentUid: Other, name: "x", description: "", now: 5 }),
    );
    const pending = async (uid: string) => (await s.getSubscription(uid))!.delivery.pendingCount;
    expect(await pending(hook.uid)).toBe(1);
    expect(await pending(above.uid)).toBe(2);
    expect(await pending(otherType.uid)).toBe(0);
    expect(await s.getOutboxDepth()).toBe(3);
    // A failed change writes no event, so no delivery.
    await expect(
      asCall(created, () =>
        s.createGroup({ uid: childOf(G), parentUid: G, name: "below", description: "", now: 6 }),
      ),
    ).rejects.toThrow();
    expect(await s.getOutboxDepth()).toBe(3);
  });

  it("claims under a lease, and keeps only the outcome of the lease holder", async () => {
    const s = store();
    const hook = await s.createSubscription(sub());
    const g = childOf(G);
    const t0 = Date.now();
    await asCall(created, () =>
      s.createGroup({ uid: g, parentUid: G, name: "c", description: "", now: 100 }),
    );
    // Due from the event's time (the store's clock), not before.
    expect(await s.claimDeliveries({ now: t0 - 1, limit: 5, lease: "a", leaseUntil: t0 })).toEqual(
      [],
    );
    const b = Date.now() + 10_000;
    expect(await s.findDueDelivery(t0 - 1)).toBeUndefined();
    expect(await s.findDueDelivery(b)).toBeDefined();
    const [d] = await s.claimDeliveries({ now: b, limit: 5, lease: "a", leaseUntil: b + 100 });
    expect(await s.findDueDelivery(b + 50)).toBeUndefined();
    expect(await s.findDueDelivery(b + 100)).toBe(d!.id);
    expect(d).toMatchObject({
      subscriptionUid: hook.uid,
      sink: "https://hooks.example.com/x",
      secret: "whsec_test",
      attempts: 0,
      event: { type: created, subject: g },
    });
    expect(d!.event!.time).toBeGreaterThanOrEqual(t0);
    // Leased: nobody else gets it until the lease ends; then another claim takes it over.
    expect(
      await s.claimDeliveries({ now: b + 50, limit: 5, lease: "b", leaseUntil: b + 300 }),
    ).toEqual([]);
    const [again] = await s.claimDeliveries({
      now: b + 100,
      limit: 5,
      lease: "b",
      leaseUntil: b + 300,
    });
    expect(again!.id).toBe(d!.id);
    // The first holder's late outcome is ignored.
    const base = {
      id: d!.id,
      subscriptionUid: hook.uid,
      status: 500,
      error: "HTTP 500",
      now: b + 110,
    };
    await s.finishDelivery({ ...base, lease: "a", delivered: false, retryAt: b + 1000 });
    expect((await s.getSubscription(hook.uid))!.delivery.failedAttempts).toBe(0);
    // The holder's failure: retried later, counted.
    await s.finishDelivery({ ...base, lease: "b", delivered: false, retryAt: b + 1000 });
    expect((await s.getSubscription(hook.uid))!.delivery).toMatchObject({
      pendingCount: 1,
      failedAttempts: 1,
      lastStatus: 500,
      lastError: "HTTP 500",
      lastAttemptTime: b + 110,
    });
    expect(
      await s.claimDeliveries({ now: b + 999, limit: 5, lease: "c", leaseUntil: b + 2000 }),
    ).toEqual([]);
    const [third] = await s.claimDeliveries({
      now: b + 1000,
      limit: 5,
      lease: "c",
      leaseUntil: b + 2000,
    });
    expect(third!.attempts).toBe(1);
    await s.finishDelivery({
      ...base,
      lease: "c",
      delivered: true,
      status: 204,
      error: "",
      now: b + 1001,
    });
    expect((await s.getSubscription(hook.uid))!.delivery).toMatchObject({
      pendingCount: 0,
      deliveredCount: 1,
      failedAttempts: 1,
      lastStatus: 204,
      lastError: "",
      lastSuccessTime: b + 1001,
    });
    expect(await s.getOutboxDepth()).toBe(0);
  });

  it("counts an abandoned delivery; a deleted group takes its subscriptions and deliveries", async () => {
    const s = store();
    const hook = await s.createSubscription(sub());
    await asCall(created, () =>
      s.createGroup({ uid: childOf(G), parentUid: G, name: "d", description: "", now: 1 }),
    );
    const later = Date.now() + 10_000;
    const [d] = await s.claimDeliveries({ now: later, limit: 5, lease: "a", leaseUntil: later });
    await s.finishDelivery({
      id: d!.id,
      lease: "a",
      subscriptionUid: hook.uid,
      delivered: false,
      status: 0,
      error: "gave up after 1 attempts: refused",
      now: 2,
    });
    expect((await s.getSubscription(hook.uid))!.delivery).toMatchObject({
      pendingCount: 0,
      abandonedCount: 1,
      failedAttempts: 1,
    });
    const empty = childOf(R);
    await s.createGroup({ uid: empty, parentUid: R, name: "gone", description: "", now: 1 });
    const there = await s.createSubscription(sub({ groupUid: empty, uid: childOf(empty) }));
    await asCall(created, () =>
      s.createGroup({ uid: childOf(empty), parentUid: empty, name: "e", description: "", now: 1 }),
    );
    expect(await s.getOutboxDepth()).toBe(1);
    const kid = (await s.listGroups(listQuery({ childrenOf: empty }))).items[0]!.uid;
    await s.deleteGroup(kid);
    await s.deleteGroup(empty);
    expect(await s.getSubscription(there.uid)).toBeUndefined();
    expect(await s.getOutboxDepth()).toBe(0);
  });
}
