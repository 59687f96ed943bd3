import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { changeScope } from "../../src/events/audit-scope.js";
import { createEventRetention } from "../../src/events/event-retention.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { newPgDatabase } from "../helpers/postgres.js";

// The audit trail's retention on both backends, on an injected clock: events older than the
// retention go, in batches of one transaction each, and the rest stay; an event with a webhook
// delivery still pending stays until the delivery ends.

const day = 86_400_000;
const t0 = Date.parse("2026-01-01T00:00:00Z");

describe.each(["sqlite", "postgres"] as const)("event retention on %s", (backend) => {
  let t = t0;
  const clock = () => t;
  let store: Store;

  beforeAll(async () => {
    store =
      backend === "sqlite"
        ? createSqliteStore(":memory:", { roles: storeRoles, now: clock })
        : await createPostgresStore(await newPgDatabase(), {
            roles: storeRoles,
            now: clock,
            listen: false,
          });
  });
  afterAll(() => store?.close());

  /** Make a group (an organization by default) at the clock's now: one event, recorded with it. */
  const change = (name: string, parentUid = "") =>
    store
      .recording(
        changeScope({ type: "dev.gatehouse.iam.group.created.v1", source: "test", operator: "t" }),
      )
      .createGroup({
        uid: parentUid ? newChildUid(parentUid) : newRootUid(),
        parentUid,
        name,
        description: "",
        now: t,
      });
  const times = async () =>
    (
      await store.listEvents({
        filters: {},
        order: { field: "create_time", desc: false },
        skip: 0,
        limit: 1000,
      })
    ).items.map((e) => (e.time - t0) / day);

  it("deletes what is older than the retention, batch by batch, and keeps the rest", async () => {
    for (let i = 0; i < 25; i++) await change(`old-${i}`);
    t = t0 + day;
    await change("at-the-cutoff");
    t = t0 + 50 * day;
    for (let i = 0; i < 3; i++) await change(`recent-${i}`);
    expect(await times()).toHaveLength(29);

    const limits: number[] = [];
    const counted: Pick<Store, "pruneEvents"> = {
      pruneEvents: async (before, limit) => {
        const n = await store.pruneEvents(before, limit);
        limits.push(n);
        return n;
      },
    };
    const logs: Record<string, unknown>[] = [];
    const job = createEventRetention({
      store: counted,
      now: clock,
      retentionMs: 90 * day,
      batchSize: 10,
      log: (fields) => void logs.push(fields),
    });
    // Before anything is 90 days old, nothing goes.
    t = t0 + 90 * day;
    expect(await job.run()).toBe(0);
    expect(limits).toEqual([0]);

    // 91 days on: the 25 of day 0 go, in three transactions; day 1's event is exactly at the
    // cutoff and stays.
    t = t0 + 91 * day;
    limits.length = 0;
    expect(await job.run()).toBe(25);
    expect(limits).toEqual([10, 10, 5]);
    expect(await times()).toEqual([1, 50, 50, 50]);
    expect(logs.at(-1)).toEqual({ pruned: 25, before: new Date(t0 + day).toISOString() });
    expect(JSON.stringify(logs)).not.toContain("old-");
  });

  it("lets writers in between its batches", async () => {
    t = t0 + 200 * day;
    for (let i = 0; i < 30; i++) await change(`backlog-${i}`);
    t = t0 + 300 * day;
    // After its first batch the prune waits for a change made meanwhile: were it to hold the
    // database from one batch to the next (one long transaction), the change could not
    // complete and the prune would never end.
    let meanwhile: Promise<unknown> | undefined;
    const waiting: Pick<Store, "pruneEvents"> = {
      pruneEvents: async (before, limit) => {
        const n = await store.pruneEvents(before, limit);
        if (!meanwhile) {
          meanwhile = change("meanwhile");
          await meanwhile;
        }
        return n;
      },
    };
    const job = createEventRetention({
      store: waiting,
      now: clock,
      retentionMs: 90 * day,
      batchSize: 5,
      log: () => {},
    });
    expect(await job.run()).toBe(34);
    expect(await times()).toEqual([300]);
  });

  it("keeps an event while a webhook delivery of it is pending, until delivered or abandoned", async () => {
    t = t0 + 400 * day;
    // An organization (made without an event) with a subscription to group creations in it.
    const org = newRootUid();
    await store.createGroup({ uid: org, parentUid: "", name: "hooked", description: "", now: t });
    const sub = await store.createSubscription({
      uid: newChildUid(org),
      groupUid: org,
      name: "hook",
      description: "",
      sink: "https://hooks.example.com/x",
      eventTypes: ["dev.gatehouse.iam.group.created.v1"],
      secret: "whsec_test",
      now: t,
    });
    await change("owed", org); // one delivery pending
    t = t0 + 401 * day;
    await change("not-owed"); // another organization's: none
    expect(await store.getOutboxDepth()).toBe(1);

    t = t0 + 600 * day;
    const job = createEventRetention({
      store,
      now: clock,
      retentionMs: 90 * day,
      // One a batch: the kept event must not use up a batch and stop the prune short.
      batchSize: 1,
      log: () => {},
    });
    // The earlier cases' last event and "not-owed" go; "owed" stays, older though it is.
    expect(await job.run()).toBe(2);
    expect(await times()).toEqual([400]);

    // A failed attempt to be retried: still owed, still kept.
    const fair = { perOrganization: 10, perSubscription: 10, probeAfter: 5 };
    const claim = async (lease: string) => {
      const claimed = await store.claimDeliveries({
        ...fair,
        now: t,
        limit: 10,
        lease,
        leaseUntil: t + 1,
      });
      expect(claimed).toHaveLength(1);
      expect(claimed[0]!.event?.subject).toBeDefined();
      return claimed[0]!.id;
    };
    const outcome = { subscriptionUid: sub.uid, status: 503, error: "the sink answered HTTP 503" };
    await store.finishDelivery({
      ...outcome,
      id: await claim("a"),
      lease: "a",
      delivered: false,
      now: t,
      retryAt: t,
    });
    expect(await job.run()).toBe(0);
    expect(await times()).toEqual([400]);

    // Abandoned (the attempts spent): nothing is owed any more, and the event goes.
    await store.finishDelivery({
      ...outcome,
      id: await claim("b"),
      lease: "b",
      delivered: false,
      now: t,
    });
    expect(await store.getOutboxDepth()).toBe(0);
    expect(await job.run()).toBe(1);
    expect(await times()).toEqual([]);

    // Delivered: the same.
    await change("delivered", org);
    t = t0 + 800 * day;
    expect(await job.run()).toBe(0);
    await store.finishDelivery({
      subscriptionUid: sub.uid,
      id: await claim("c"),
      lease: "c",
      delivered: true,
      status: 204,
      error: "",
      now: t,
    });
    expect(await job.run()).toBe(1);
    expect(await times()).toEqual([]);
  });
});
