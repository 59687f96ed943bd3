/**
 * `npm run build && node dist/bench/webhook-claims.js`: what a fair claim of due webhook
 * deliveries costs (claimDeliveries, src/store/ops/subscriptions.ts) as one subscription's
 * backlog grows, on SQLite (a file, FULL durability: the claim holds the one writer) and
 * PostgreSQL (the replicas' claims take turns under a lock). Each size's median claim of 8,
 * with nine other organizations waiting, against the same claim with no backlog, in the same
 * run: a claim should cost the same whatever waits behind a dead sink.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { storeRoles } from "../src/auth/capabilities.js";
import { createPostgresStore } from "../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { newChildUid, newRootUid } from "../src/uid.js";
import { startBenchPostgres } from "./postgres-server.js";

const caps = { perOrganization: 4, perSubscription: 2, probeAfter: 5 };

/** Raw SQL on the store's database, for the backlog the API would take hours to write. */
type Exec = (text: string, params: unknown[]) => Promise<void>;

/** A subscription of a new organization. */
async function subscription(store: Store): Promise<string> {
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

async function run(name: string, store: Store, exec: Exec) {
  const backlog = await subscription(store);
  // Nine calm organizations with one due delivery each, the claim's other candidates.
  const calm: string[] = [];
  for (let i = 0; i < 9; i++) calm.push(await subscription(store));
  let rows = 0;
  const grow = async (to: number) => {
    while (rows < to) {
      const n = Math.min(1000, to - rows);
      await exec(
        `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
         SELECT 'b' || (? + v), ?, 'e', ? + v FROM (${series(n)}) AS t`,
        [rows, backlog, rows],
      );
      rows += n;
    }
  };
  /** Median milliseconds of a claim of 8 (its leases released after, so all stay due). */
  const claimMs = async (runs: number) => {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      for (const [j, uid] of calm.entries()) {
        await exec(
          "INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time) VALUES (?, ?, 'e', 0)",
          [`c${i}-${j}`, uid],
        );
      }
      const start = performance.now();
      const got = await store.claimDeliveries({
        ...caps,
        now: 10_000_000,
        limit: 8,
        lease: `l${i}`,
        leaseUntil: 10_000_001,
      });
      times.push(performance.now() - start);
      if (got.length !== 8) throw new Error(`claimed ${got.length}, not 8`);
      await exec("UPDATE webhook_deliveries SET lease = '', lease_until = 0 WHERE lease = ?", [
        `l${i}`,
      ]);
      await exec("DELETE FROM webhook_deliveries WHERE id LIKE 'c%'", []);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
  };
  const base = await claimMs(30);
  console.log(`${name} backlog 0: claim of 8 ${base.toFixed(2)} ms (baseline)`);
  for (const size of [1_000, 10_000, 50_000]) {
    await grow(size);
    const ms = await claimMs(30);
    console.log(
      `${name} backlog ${size}: claim of 8 ${ms.toFixed(2)} ms (x${(ms / base).toFixed(1)} the baseline)`,
    );
  }
}

/** 0 to n-1 as rows of one column, in SQL both backends read. */
function series(n: number): string {
  return `WITH RECURSIVE s(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM s WHERE v < ${n - 1}) SELECT v FROM s`;
}

const dir = mkdtempSync(join(tmpdir(), "gatehouse-claims-"));
const postgres = await startBenchPostgres();
try {
  const sqlite = createSqliteStore(join(dir, "bench.db"), { roles: storeRoles });
  try {
    await run("SQLite", sqlite, async (text, params) => {
      sqlite.db.prepare(text).run(...(params as never[]));
    });
  } finally {
    await sqlite.close();
  }
  const url = await postgres.createDatabase("claims_bench");
  const store = await createPostgresStore(url, { roles: storeRoles });
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await run("PostgreSQL", store, async (text, params) => {
      let n = 0;
      await pool.query(
        text.replace(/\?/g, () => `$${++n}`),
        params,
      );
    });
  } finally {
    await pool.end();
    await store.close();
  }
} finally {
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
}
