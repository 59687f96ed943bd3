/**
 * The benchmark dataset of bench/seed.ts, in the same shape, seeded into a PostgreSQL database
 * through the Store API: an organization whose tree has 111,111 groups (fan-out 10, depth 5),
 * 10,000 workload identities, 20,000 role bindings at depths 0 to 4, 1,000 repos and 100,000
 * tags. Calls run in `atomically` batches (one SERIALIZABLE transaction of a few thousand
 * calls each), one batch at a time: every CreateGroup updates its ancestors' descendant
 * counts, so concurrent batches would only conflict on the root's.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinRoles, ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { createPostgresStore } from "../src/store/postgres/pg-store.js";
import type { Store } from "../src/store/store.js";
import { newChildUid, newRootUid } from "../src/uid.js";
import { type BenchPostgres, startBenchPostgres } from "./postgres-server.js";
import type { SeedManifest } from "./seed.js";

const fanOut = 10;
const batchSize = 2_000;

/** Seed `url` (a migrated or empty database) to `depth` levels (5: the SQLite bench's 111,111). */
export async function seedPostgres(
  url: string,
  opts: { depth?: number; log?: (line: string) => void } = {},
): Promise<SeedManifest> {
  const depth = opts.depth ?? 5;
  const log = opts.log ?? console.log;
  const started = performance.now();
  const store = await createPostgresStore(url, { roles: storeRoles, listen: false });
  // Calls queue here and run `batchSize` at a time in one transaction.
  let queue: ((tx: Store) => Promise<unknown>)[] = [];
  const flush = async () => {
    const calls = queue;
    queue = [];
    if (calls.length === 0) return;
    await store.atomically(async (tx) => {
      for (const call of calls) await call(tx);
    });
  };
  const add = async (call: (tx: Store) => Promise<unknown>) => {
    queue.push(call);
    if (queue.length >= batchSize) await flush();
  };
  const lap = (what: string, t: number) =>
    log(`pg seed ${what}: ${Math.round(performance.now() - t)} ms`);
  const now = Date.now();

  let t = performance.now();
  const admin = await store.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.bench",
    subject: "admin",
    name: "Bench Admin",
    email: "",
    now,
  });
  const root = newRootUid();
  await store.createOrganization(
    { uid: root, name: "bench", description: "benchmark organization", now },
    { bindingUid: newChildUid(root), identityUid: admin.uid, roleUid: ownerRole.uid },
  );
  const levels: string[][] = [[root]];
  let groups = 1;
  for (let d = 1; d <= depth; d++) {
    const level: string[] = [];
    for (const parent of levels[d - 1]!) {
      for (let i = 0; i < fanOut; i++) {
        const uid = newChildUid(parent);
        const name = `g${d}-${level.length.toString().padStart(6, "0")}`;
        const at = now + groups;
        await add((tx) =>
          tx.createGroup({ uid, parentUid: parent, name, description: "", now: at }),
        );
        level.push(uid);
        groups++;
      }
    }
    levels.push(level);
  }
  await flush();
  lap(`${groups} groups`, t);

  t = performance.now();
  const roles = builtinRoles.map((r) => r.uid);
  let identities = 0;
  let bindings = 0;
  const identityDepth = Math.min(4, depth);
  for (const group of levels[identityDepth]!) {
    const n = identities;
    const identityUid = newChildUid(group);
    await add((tx) =>
      tx.createIdentity({
        uid: identityUid,
        groupUid: group,
        name: `workload ${n}`,
        description: "",
        claimMatch: {
          issuer: "https://ci.bench",
          issuerPattern: "",
          subject: `workload-${n}`,
          subjectPattern: "",
          audience: "",
          audiencePattern: "",
          claims: {},
          claimPatterns: {},
        },
        now,
      }),
    );
    const ancestor = group
      .split("/")
      .slice(0, (n % 4) + 1)
      .join("/");
    for (const at of [group, ancestor]) {
      const roleUid = roles[(n + bindings) % roles.length]!;
      await add((tx) =>
        tx.createRoleBinding({ uid: newChildUid(at), groupUid: at, identityUid, roleUid, now }),
      );
      bindings++;
    }
    identities++;
  }
  await flush();
  lap(`${identities} identities, ${bindings} bindings`, t);

  t = performance.now();
  let tags = 0;
  let repos = 0;
  for (const group of levels[Math.min(3, depth)]!) {
    const repoUid = newChildUid(group);
    const name = `repo-${repos}`;
    const batch = Array.from({ length: 100 }, (_, i) => ({
      name: `v${i}.0.0`,
      digest: `sha256:${(repos * 100 + i).toString(16).padStart(64, "0")}`,
      deprecated: false,
    }));
    await add(async (tx) => {
      await tx.createRepo({
        uid: repoUid,
        groupUid: group,
        name,
        description: "",
        aliases: [],
        now,
      });
      await tx.importTags(repoUid, batch, () => newChildUid(repoUid), now);
    });
    tags += batch.length;
    repos++;
  }
  await flush();
  lap(`${repos} repos, ${tags} tags`, t);
  await store.close();
  const seedMs = Math.round(performance.now() - started);
  log(`pg seed total: ${seedMs} ms`);
  return {
    version: 1,
    root,
    admin: admin.uid,
    leaf: levels[depth]![levels[depth]!.length - 1]!,
    deepParent: levels[Math.max(0, depth - 1)]![0]!,
    groups,
    identities,
    bindings,
    repos,
    tags,
    seedMs,
  };
}

/** Where the seeded cluster is kept between runs (under the gitignored data/). */
export const pgSeedDir = "data/bench/pg-v1";

/**
 * Start the bench's PostgreSQL, on the cluster kept in `pgSeedDir` with its database `seed`
 * seeded (to `depth`) and a manifest beside it; seed it first if either is missing.
 */
export async function ensurePgSeeded(
  depth = 5,
  log: (line: string) => void = console.log,
): Promise<{ server: BenchPostgres; manifest: SeedManifest; cached: boolean }> {
  // The full dataset in pgSeedDir; smaller ones (for trying the bench out) beside it.
  const dir = depth === 5 ? pgSeedDir : `${pgSeedDir}-depth${depth}`;
  const manifestPath = `${pgSeedDir}-depth${depth}.json`;
  const cachedManifest = existsSync(manifestPath)
    ? (JSON.parse(readFileSync(manifestPath, "utf8")) as SeedManifest)
    : undefined;
  if (!cachedManifest) rmSync(dir, { recursive: true, force: true });
  const server = await startBenchPostgres({ dir });
  if (cachedManifest) return { server, manifest: cachedManifest, cached: true };
  try {
    const url = await server.createDatabase("seed");
    const manifest = await seedPostgres(url, { depth, log });
    // Written last: an interrupted seed never looks cached.
    writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    return { server, manifest, cached: false };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { server, manifest, cached } = await ensurePgSeeded(Number(process.argv[2] ?? 5));
  console.log(cached ? "cached" : "seeded", manifest);
  await server.stop();
}
