/**
 * `npm run build && node dist/bench/webhook-claims.js`: what a fair claim of due webhook
 * deliveries costs (claimDeliveries, src/store/ops/subscriptions.ts) as one subscription's
 * backlog grows, on SQLite (a file, FULL durability), where the claim holds the one writer.
 * Each size's median claim of 8 against the same claim with no backlog, in the same run: the
 * claim ranks every due delivery (window functions), so it grows with what is due; a paused
 * subscription's backlog is not due (its rows wait for the pause's end) and costs nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeRoles } from "../src/auth/capabilities.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

const dir = mkdtempSync(join(tmpdir(), "gatehouse-claims-"));
const store = createSqliteStore(join(dir, "bench.db"), { roles: storeRoles });
const caps = { perOrganization: 4, perSubscription: 2, probeAfter: 5 };

/** A subscription of a new organization. */
async function subscription(): Promise<string> {
  const org = newRootUid();
  await store.createGroup({ uid: org, parentUid: "", name: "o", description: "", now: 1 });
  const uid = newChildUid(org);
  await store.createSubscription({
    uid,
    groupUid: org,
    name: "s",
    description: "",
    sink: "https://hooks.example.com/x",
    eventTypes: ["dev.gatehouse.iam.group.created.v1"],
    secret: "whsec_x",
    now: 1,
  });
  return uid;
}

const insert = store.db.prepare(
  "INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time) VALUES (?, ?, ?, ?)",
);
const backlog = await subscription();
// Nine calm organizations with one due delivery each, the claim's other candidates.
const calm = await Promise.all(Array.from({ length: 9 }, subscription));
let rows = 0;
const grow = (to: number) => {
  store.db.transaction(() => {
    for (; rows < to; rows++) insert.run(`b${rows}`, backlog, `e${rows}`, rows);
  })();
};

/** Median milliseconds of a claim of 8 (the leases released after each, so all stay due). */
async function claimMs(runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    for (const [j, uid] of calm.entries()) insert.run(`c${i}-${j}`, uid, `ce${j}`, 0);
    const start = performance.now();
    const got = await store.claimDeliveries({
      ...caps,
      now: 10_000_000,
      limit: 8,
      lease: `l${i}`,
      leaseUntil: 10_000_001,
    });
    times.push(performance.now() - start);
    store.db
      .prepare("UPDATE webhook_deliveries SET lease = '', lease_until = 0 WHERE lease = ?")
      .run(`l${i}`);
    store.db.exec("DELETE FROM webhook_deliveries WHERE id LIKE 'c%'");
    if (got.length !== 8) throw new Error(`claimed ${got.length}, not 8`);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

try {
  const base = await claimMs(30);
  console.log(`backlog 0: claim of 8 ${base.toFixed(2)} ms (baseline)`);
  for (const size of [1_000, 10_000, 50_000]) {
    grow(size);
    const ms = await claimMs(30);
    console.log(
      `backlog ${size}: claim of 8 ${ms.toFixed(2)} ms (x${(ms / base).toFixed(1)} the baseline)`,
    );
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
