/**
 * `npm run build && node dist/bench/store-ops.js [--seconds=2]`: the store operations through
 * the Store API, in process, on both backends.
 *
 * 1. A PostgreSQL replica's access cache beside CreateGroup load: replica B answers access
 *    questions (capabilitiesAt, as every authenticated call asks) while replica A creates
 *    groups as the CreateGroup RPC does (with its audit event). Against the same reads alone,
 *    and beside a write that does change access answers (a role binding created and
 *    deleted), from the same run. A group create cannot change an access answer, so B's hit
 *    rate should stay as it is alone; a binding write must empty it.
 * 2. Each read and write path of the operations written once for both backends (ops/), on
 *    SQLite (a file, FULL durability) and PostgreSQL: operations per second, one at a time and
 *    16 in flight. Compare two commits by running this at each.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeRoles } from "../src/auth/capabilities.js";
import { createPostgresStore } from "../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { newChildUid, newRootUid } from "../src/uid.js";
import { startBenchPostgres } from "./postgres-server.js";

const seconds = Number(
  process.argv.find((a) => a.startsWith("--seconds="))?.slice("--seconds=".length) ?? 2,
);

/** Run `op` from `inFlight` loops for `ms`; operations per second. */
async function rate(ms: number, inFlight: number, op: (i: number) => Promise<unknown>) {
  const end = performance.now() + ms;
  let n = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) await op(n++);
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

/** An organization with `people` identities, each bound to the owner role at its root. */
async function seedOrg(store: Store, people: number) {
  const now = Date.now();
  const org = newRootUid();
  await store.createGroup({ uid: org, parentUid: "", name: "bench", description: "", now });
  const ids: string[] = [];
  for (let i = 0; i < people; i++) {
    const uid = newChildUid(org);
    await store.createIdentity({ uid, groupUid: org, name: `p${i}`, description: "", now });
    await store.createRoleBinding({
      uid: newChildUid(org),
      groupUid: org,
      identityUid: uid,
      roleUid: storeRoles.ownerRoleUid,
      now,
    });
    ids.push(uid);
  }
  return { org, ids };
}

/** The scope the audit interceptor opens for a CreateGroup call. */
const createGroupScope = () => ({
  type: "dev.gatehouse.iam.group.created.v1",
  source: "/gatehouse.iam.v2beta1.GroupsService",
  actorUid: "",
  requestId: `bench-${Math.random()}`,
  protocol: "connect",
  requestUid: "",
  recorded: false,
});

async function replicaCache(url: string) {
  const a = await createPostgresStore(url, { roles: storeRoles });
  const b = await createPostgresStore(url, { roles: storeRoles });
  try {
    const { org, ids } = await seedOrg(a, 200);
    // Each read waits a turn of the event loop first, as a call arriving on a socket would: a
    // cached answer resolves without I/O, and would otherwise starve the writers.
    const reads = () =>
      rate(seconds * 1000, 8, async (i) => {
        await new Promise(setImmediate);
        return b.capabilitiesAt(ids[i % ids.length]!, [org]);
      });
    const hitRate = async (beside?: (stop: () => boolean) => Promise<number>) => {
      const before = b.accessCacheCounts();
      let done = false;
      const writes = beside?.(() => done);
      const perSecond = await reads();
      done = true;
      const written = (await writes) ?? 0;
      const after = b.accessCacheCounts();
      const hits = after.hits - before.hits;
      const all = hits + after.misses - before.misses;
      return { hitRate: hits / all, perSecond, written, failed: failed.splice(0).length };
    };
    const writer =
      (write: (i: number, worker: number) => Promise<unknown>) =>
      async (stop: () => boolean): Promise<number> => {
        let n = 0;
        const start = performance.now();
        await Promise.all(
          Array.from({ length: 4 }, async (_, worker) => {
            while (!stop()) {
              // A write refused (serialization retries run out) is counted, not fatal.
              await write(n++, worker).catch(() => failed.push(n));
            }
          }),
        );
        return n / ((performance.now() - start) / 1000);
      };
    const failed: number[] = [];
    const alone = await hitRate();
    const groups = await hitRate(
      writer((i) =>
        a.recording(createGroupScope()).createGroup({
          uid: newChildUid(org),
          parentUid: org,
          name: `g${i}-${Math.random()}`,
          description: "",
          now: Date.now(),
        }),
      ),
    );
    const bindings = await hitRate(
      // Each writer binds its own identity, so that the writers never collide.
      writer(async (_, worker) => {
        const uid = newChildUid(org);
        await a.createRoleBinding({
          uid,
          groupUid: org,
          identityUid: ids[worker]!,
          roleUid: storeRoles.builtins.find((r) => r.name === "viewer")!.uid,
          now: Date.now(),
        });
        await a.deleteRoleBinding(uid);
      }),
    );
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
    console.log(
      "\nReplica B's access cache (capabilitiesAt, 8 in flight), beside replica A's writes",
    );
    console.log("| load on A | B hit rate | B reads/s | A writes/s | A writes refused |");
    console.log("|---|---|---|---|---|");
    const line = (label: string, r: typeof alone) =>
      console.log(
        `| ${label} | ${pct(r.hitRate)} | ${r.perSecond.toFixed(0)} | ${r.written.toFixed(0)} | ${r.failed} |`,
      );
    line("none (baseline)", alone);
    line("CreateGroup, 4 in flight", groups);
    line("binding create+delete, 4 in flight", bindings);
  } finally {
    await a.close();
    await b.close();
  }
}

async function paths(name: string, store: Store) {
  const { org } = await seedOrg(store, 1);
  const ms = (seconds * 1000) / 2;
  const repos: string[] = [];
  const out: [string, number, number][] = [];
  const both = async (label: string, op: (i: number) => Promise<unknown>) => {
    out.push([label, await rate(ms, 1, op), await rate(ms, 16, op)]);
  };
  await both("createRepo", async () => {
    const uid = newChildUid(org);
    repos.push(uid);
    await store.createRepo({
      uid,
      groupUid: org,
      name: uid,
      description: "",
      aliases: [],
      now: Date.now(),
    });
  });
  await both("getRepo", (i) => store.getRepo(repos[i % repos.length]!));
  await both("updateRepo", (i) =>
    store.updateRepo(repos[i % repos.length]!, { description: `d${i}` }, Date.now()),
  );
  await both("listRepos (page of 20)", () =>
    store.listRepos({
      childrenOf: org,
      filters: {},
      order: { field: "name", desc: false },
      skip: 0,
      limit: 20,
    }),
  );
  // Deletes: the repos created above, half one at a time and half 16 in flight.
  const deletes = async (uids: string[], inFlight: number) => {
    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let uid = uids[next++]; uid; uid = uids[next++]) await store.deleteRepo(uid);
      }),
    );
    return uids.length / ((performance.now() - start) / 1000);
  };
  const half = Math.floor(repos.length / 2);
  out.push([
    "deleteRepo",
    await deletes(repos.slice(0, half), 1),
    await deletes(repos.slice(half), 16),
  ]);
  console.log(`\n${name}: operations per second`);
  console.log("| operation | 1 at a time | 16 in flight |");
  console.log("|---|---|---|");
  for (const [label, one, many] of out) {
    console.log(`| ${label} | ${one.toFixed(0)} | ${many.toFixed(0)} |`);
  }
}

const dir = mkdtempSync(join(tmpdir(), "gatehouse-store-ops-"));
const pg = await startBenchPostgres();
try {
  await replicaCache(await pg.createDatabase("cache_bench"));
  const sqlite = createSqliteStore(join(dir, "bench.db"), { roles: storeRoles });
  try {
    await paths("SQLite", sqlite);
  } finally {
    await sqlite.close();
  }
  const store = await createPostgresStore(await pg.createDatabase("paths_bench"), {
    roles: storeRoles,
  });
  try {
    await paths("PostgreSQL", store);
  } finally {
    await store.close();
  }
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
