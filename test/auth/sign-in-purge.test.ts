import { afterEach, expect, it, vi } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { createSignInPurge, unfinishedSignInGraceMs } from "../../src/auth/oauth/sign-in-purge.js";
import { startPeriodic } from "../../src/periodic-job.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

// The purge runs by itself every interval, on the server's clock; the timers are faked, so the
// test waits for nothing.

afterEach(() => {
  vi.useRealTimers();
});

it("runs every interval until stopped, deleting people who never finished a sign-in", async () => {
  vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
  const store = createSqliteStore(":memory:", { roles: storeRoles });
  let clock = 1_000_000;
  const logged: string[] = [];
  const job = createSignInPurge({
    store,
    now: () => clock,
    log: (_f, msg) => logged.push(msg),
    idlePersonRetentionMs: 30 * 86_400_000,
  });
  const stop = startPeriodic(job, 60_000, (err) => {
    throw err;
  });
  try {
    const signUp = async (uid: string) => {
      await store.upsertPerson({
        uid,
        issuer: "https://idp.test",
        subject: uid,
        name: uid,
        email: "",
        now: clock,
      });
      await store.noteUnfinishedSignIn(uid, true, clock);
    };
    const first = "1".repeat(40);
    const second = "2".repeat(40);
    await signUp(first);
    clock += unfinishedSignInGraceMs;
    await signUp(second);
    // Before the interval has passed, nothing ran.
    await vi.advanceTimersByTimeAsync(59_999);
    expect(await store.getIdentity(first)).toBeDefined();
    await vi.advanceTimersByTimeAsync(1);
    await vi.waitFor(async () => expect(await store.getIdentity(first)).toBeUndefined());
    expect(await store.getIdentity(second)).toBeDefined();
    expect(logged).toContain("sign-in rows purged");
    // The deletion is in the audit trail, by the server's upkeep (no identity acts).
    const trail = await store.listEvents({
      childrenOf: first,
      filters: { type: "dev.gatehouse.iam.identity.deleted.v1" },
      order: { field: "create_time", desc: false },
      skip: 0,
      limit: 10,
    });
    expect(trail.items).toMatchObject([{ subject: first, actorUid: "" }]);
    expect(JSON.parse(trail.items[0]!.data)).toMatchObject({ operator: "sign-in purge" });
    stop();
    clock += unfinishedSignInGraceMs;
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(await store.getIdentity(second)).toBeDefined();
    expect((await job.run()).people).toBe(1);
    expect(await store.getIdentity(second)).toBeUndefined();
  } finally {
    stop();
    await store.close();
  }
});
