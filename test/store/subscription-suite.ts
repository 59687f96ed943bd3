import { beforeEach, expect, it } from "vitest";
import type { AuditScope } from "../../src/events/audit-scope.js";
import type { Store } from "../../src/store/store.js";
import type { NewSubscription } from "../../src/store/subscription-store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "e".repeat(40);
const G = `${R}/1111111111111111`;
const G2 = `${R}/2222222222222222`;
const Other = "f".repeat(40);
const created = "dev.gatehouse.iam.group.created.v1";

// Caps no case but the fairness one reaches.
const fair = { perOrganization: 100, perSubscription: 100, probeAfter: 5 };

let next = 0;
const childOf = (parent: string) => `${parent}/${(++next).toString(16).padStart(16, "0")}`;

/**
 * Run `fn` as a mutating RPC would, through the store's view for the call: its first change
 * writes the call's event (and fan-out).
 */
function asCall<R>(store: Store, type: string, fn: (s: Store) => Promise<R>): Promise<R> {
  const scope: AuditScope = {
    type,
    source: "/test",
    actorUid: "someone",
    requestId: "r",
    protocol: "grpc",
    requestUid: "",
    recorded: false,
  };
  return fn(store.recording(scope));
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
      consecutiveFailures: 0,
      pausedUntil: 0,
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
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(G), parentUid: G, name: "below", description: "", now: 5 }),
    );
    // A group under G2: only R's.
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(G2), parentUid: G2, name: "aside", description: "", now: 5 }),
    );
    // Another organization: none.
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(Other), parentUid: Other, name: "x", description: "", now: 5 }),
    );
    const pending = async (uid: string) => (await s.getSubscription(uid))!.delivery.pendingCount;
    expect(await pending(hook.uid)).toBe(1);
    expect(await pending(above.uid)).toBe(2);
    expect(await pending(otherType.uid)).toBe(0);
    expect(await s.getOutboxDepth()).toBe(3);
    // A failed change writes no event, so no delivery.
    await expect(
      asCall(s, created, (c) =>
        c.createGroup({ uid: childOf(G), parentUid: G, name: "below", description: "", now: 6 }),
      ),
    ).rejects.toThrow();
    expect(await s.getOutboxDepth()).toBe(3);
  });

  it("claims under a lease, and keeps only the outcome of the lease holder", async () => {
    const s = store();
    const hook = await s.createSubscription(sub());
    const g = childOf(G);
    const t0 = Date.now();
    await asCall(s, created, (c) =>
      c.createGroup({ uid: g, parentUid: G, name: "c", description: "", now: 100 }),
    );
    // Due from the event's time (the store's clock), not before.
    expect(
      await s.claimDeliveries({ ...fair, now: t0 - 1, limit: 5, lease: "a", leaseUntil: t0 }),
    ).toEqual([]);
    const b = Date.now() + 10_000;
    expect(await s.findDueDelivery({ ...fair, now: t0 - 1 })).toBeUndefined();
    expect(await s.findDueDelivery({ ...fair, now: b })).toBeDefined();
    const [d] = await s.claimDeliveries({
      ...fair,
      now: b,
      limit: 5,
      lease: "a",
      leaseUntil: b + 100,
    });
    expect(await s.findDueDelivery({ ...fair, now: b + 50 })).toBeUndefined();
    expect(await s.findDueDelivery({ ...fair, now: b + 100 })).toBe(d!.id);
    expect(d).toMatchObject({
      subscriptionUid: hook.uid,
      sink: "https://hooks.example.com/x",
      secret: "whsec_test",
      attempt: 1,
      event: { type: created, subject: g },
    });
    expect(d!.event!.time).toBeGreaterThanOrEqual(t0);
    // Leased: nobody else gets it until the lease ends; then another claim takes it over.
    expect(
      await s.claimDeliveries({ ...fair, now: b + 50, limit: 5, lease: "b", leaseUntil: b + 300 }),
    ).toEqual([]);
    const [again] = await s.claimDeliveries({
      ...fair,
      now: b + 100,
      limit: 5,
      lease: "b",
      leaseUntil: b + 300,
    });
    expect(again!.id).toBe(d!.id);
    // Its attempt counts the first one, whose holder never told its outcome.
    expect(again!.attempt).toBe(2);
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
      await s.claimDeliveries({
        ...fair,
        now: b + 999,
        limit: 5,
        lease: "c",
        leaseUntil: b + 2000,
      }),
    ).toEqual([]);
    const [third] = await s.claimDeliveries({
      ...fair,
      now: b + 1000,
      limit: 5,
      lease: "c",
      leaseUntil: b + 2000,
    });
    expect(third!.attempt).toBe(3);
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
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(G), parentUid: G, name: "d", description: "", now: 1 }),
    );
    const later = Date.now() + 10_000;
    const [d] = await s.claimDeliveries({
      ...fair,
      now: later,
      limit: 5,
      lease: "a",
      leaseUntil: later,
    });
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
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(empty), parentUid: empty, name: "e", description: "", now: 1 }),
    );
    expect(await s.getOutboxDepth()).toBe(1);
    const kid = (await s.listGroups(listQuery({ childrenOf: empty }))).items[0]!.uid;
    await s.deleteGroup(kid);
    await s.deleteGroup(empty);
    expect(await s.getSubscription(there.uid)).toBeUndefined();
    expect(await s.getOutboxDepth()).toBe(0);
  });

  it("claims in turns across organizations and subscriptions, within their caps", async () => {
    const s = store();
    const hogA = await s.createSubscription(sub({ groupUid: R, uid: childOf(R) }));
    const hogB = await s.createSubscription(sub({ groupUid: R, uid: childOf(R) }));
    const calm = await s.createSubscription(sub({ groupUid: Other, uid: childOf(Other) }));
    // Six events of R, older than Other's one: twelve deliveries of R before Other's.
    for (let i = 0; i < 6; i++) {
      await asCall(s, created, (c) =>
        c.createGroup({ uid: childOf(G), parentUid: G, name: `busy${i}`, description: "", now: 1 }),
      );
    }
    await new Promise((r) => setTimeout(r, 5));
    await asCall(s, created, (c) =>
      c.createGroup({
        uid: childOf(Other),
        parentUid: Other,
        name: "calm",
        description: "",
        now: 1,
      }),
    );
    const now = Date.now() + 10_000;
    const claim = (lease: string, limit: number, caps: Partial<typeof fair> = {}) =>
      s.claimDeliveries({ ...fair, ...caps, now, limit, lease, leaseUntil: now + 1000 });
    // Two slots: one for each organization, not R's two oldest.
    const two = await claim("a", 2);
    expect(two.map((d) => d.subscriptionUid).filter((u) => u === calm.uid)).toHaveLength(1);
    // Caps: R's organization 3 in flight in all (its one above counts), a subscription 2.
    const more = await claim("b", 10, { perOrganization: 3, perSubscription: 2 });
    const inFlight = [...two, ...more].map((d) => d.subscriptionUid);
    const count = (uid: string) => inFlight.filter((u) => u === uid).length;
    expect(count(hogA.uid) + count(hogB.uid)).toBe(3);
    expect(count(hogA.uid)).toBeLessThanOrEqual(2);
    expect(count(hogB.uid)).toBeLessThanOrEqual(2);
    expect(await claim("c", 10, { perOrganization: 3, perSubscription: 2 })).toEqual([]);
    // The read before a claim says so too: nothing to claim, no write transaction.
    expect(
      await s.findDueDelivery({ ...fair, perOrganization: 3, perSubscription: 2, now }),
    ).toBeUndefined();
    expect(await s.findDueDelivery({ ...fair, now })).toBeDefined();

    // hogA's sink fails and the deliverer opens its breaker: paused, its due deliveries
    // put off with it.
    const mine = [...two, ...more].find((d) => d.subscriptionUid === hogA.uid)!;
    const pauseUntil = now + 5_000;
    await s.finishDelivery({
      id: mine.id,
      lease: two.includes(mine) ? "a" : "b",
      subscriptionUid: hogA.uid,
      delivered: false,
      status: 503,
      error: "HTTP 503",
      now,
      retryAt: now,
      pauseUntil,
    });
    expect((await s.getSubscription(hogA.uid))!.delivery).toMatchObject({
      pausedUntil: pauseUntil,
      consecutiveFailures: 1,
    });
    const open = await claim("d", 100);
    expect(open.some((d) => d.subscriptionUid === hogA.uid)).toBe(false);
    expect(open.some((d) => d.subscriptionUid === hogB.uid)).toBe(true);
    // An event while paused waits for the pause's end too.
    await asCall(s, created, (c) =>
      c.createGroup({ uid: childOf(G), parentUid: G, name: "paused", description: "", now: 1 }),
    );
    expect((await claim("e", 100)).some((d) => d.subscriptionUid === hogA.uid)).toBe(false);
    // After the pause, all of hogA's deliveries are due again.
    const after = await s.claimDeliveries({
      ...fair,
      now: pauseUntil,
      limit: 100,
      lease: "f",
      leaseUntil: pauseUntil + 1000,
    });
    expect(after.filter((d) => d.subscriptionUid === hogA.uid)).toHaveLength(7);
  });

  it("lets a subscription failing in a row probe with one attempt at a time", async () => {
    const s = store();
    const hook = await s.createSubscription(sub());
    for (let i = 0; i < 3; i++) {
      await asCall(s, created, (c) =>
        c.createGroup({ uid: childOf(G), parentUid: G, name: `p${i}`, description: "", now: 1 }),
      );
    }
    let now = Date.now() + 10_000;
    for (let i = 0; i < 2; i++) {
      const [d] = await s.claimDeliveries({
        ...fair,
        now,
        limit: 1,
        lease: `l${i}`,
        leaseUntil: now + 1,
      });
      await s.finishDelivery({
        id: d!.id,
        lease: `l${i}`,
        subscriptionUid: hook.uid,
        delivered: false,
        status: 0,
        error: "refused",
        now,
        retryAt: now,
      });
    }
    expect((await s.getSubscription(hook.uid))!.delivery.consecutiveFailures).toBe(2);
    now += 10;
    const probe = await s.claimDeliveries({
      ...fair,
      probeAfter: 2,
      now,
      limit: 10,
      lease: "p",
      leaseUntil: now + 100,
    });
    expect(probe).toHaveLength(1);
    expect(
      await s.claimDeliveries({
        ...fair,
        probeAfter: 2,
        now,
        limit: 10,
        lease: "q",
        leaseUntil: now + 100,
      }),
    ).toEqual([]);
    // The probe succeeds: the breaker closes, every delivery goes again.
    await s.finishDelivery({
      id: probe[0]!.id,
      lease: "p",
      subscriptionUid: hook.uid,
      delivered: true,
      status: 204,
      error: "",
      now,
    });
    expect((await s.getSubscription(hook.uid))!.delivery).toMatchObject({
      consecutiveFailures: 0,
      pausedUntil: 0,
    });
    const rest = await s.claimDeliveries({
      ...fair,
      probeAfter: 2,
      now,
      limit: 10,
      lease: "r",
      leaseUntil: now + 100,
    });
    expect(rest).toHaveLength(2);
  });
}
