/**
 * Seed the benchmark dataset through the Store API: an organization whose tree has 111,111
 * groups (fan-out 10, depth 5), 10,000 workload identities, 20,000 role bindings at depths 0
 * to 4, 1,000 repos and 100,000 tags. The file is cached: a second call with the same path
 * finds the manifest beside it and skips the work. Run alone: `node dist/bench/seed.js [path]`.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { builtinRoles, ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

/** What the benchmarks need to know about a seeded database. */
export interface SeedManifest {
  version: number;
  /** The organization: the root of the 111,111-group tree. */
  root: string;
  /** A person bound as owner at the root. */
  admin: string;
  /** A group at depth 5 (a leaf). */
  leaf: string;
  /** A group at depth 4, parent of the CreateGroup benchmark's new groups. */
  deepParent: string;
  groups: number;
  identities: number;
  bindings: number;
  repos: number;
  tags: number;
  seedMs: number;
}

const version = 1;
const fanOut = 10;
const depth = 5;

/** The default cache path, under the gitignored data/. */
export const defaultSeedPath = "data/bench/seed-v1.db";

/** Return the manifest of the seeded database at `path`, seeding it first if it is missing. */
export async function ensureSeeded(
  path = defaultSeedPath,
  log: (line: string) => void = console.log,
): Promise<{ manifest: SeedManifest; cached: boolean }> {
  const manifestPath = `${path}.json`;
  if (existsSync(path) && existsSync(manifestPath)) {
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as SeedManifest;
    if (manifest.version === version) return { manifest, cached: true };
  }
  // Seed into a temporary file, then rename: an interrupted seed never looks cached.
  const tmp = `${path}.tmp`;
  for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  const manifest = await seed(tmp, log);
  renameSync(tmp, path);
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return { manifest, cached: false };
}

async function seed(path: string, log: (line: string) => void): Promise<SeedManifest> {
  const started = performance.now();
  // NORMAL: a crash may lose the last commits, which a seed simply redoes.
  const store = createSqliteStore(path, { roles: storeRoles, synchronous: "NORMAL" });
  const now = Date.now();
  // Store operations are synchronous under their promise, so awaiting them between an explicit
  // BEGIN and COMMIT runs each (a savepoint then) inside one transaction of many: one commit
  // per batch instead of one per row. Measured: 160 s one commit per call, against the batches'.
  let pending = 0;
  store.db.exec("BEGIN");
  const batched = () => {
    if (++pending % 5000 === 0) store.db.exec("COMMIT; BEGIN");
  };
  const lap = (what: string, t: number) =>
    log(`seed ${what}: ${Math.round(performance.now() - t)} ms`);

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
  // levels[d] holds the groups at depth d.
  const levels: string[][] = [[root]];
  let groups = 1;
  for (let d = 1; d <= depth; d++) {
    const level: string[] = [];
    for (const parent of levels[d - 1]!) {
      for (let i = 0; i < fanOut; i++) {
        const uid = newChildUid(parent);
        await store.createGroup({
          uid,
          parentUid: parent,
          name: `g${d}-${level.length.toString().padStart(6, "0")}`,
          description: "",
          now: now + groups,
        });
        batched();
        level.push(uid);
        groups++;
      }
    }
    levels.push(level);
  }
  lap(`${groups} groups`, t);

  // One identity in each depth-4 group; two bindings each: at its group, and at an ancestor
  // whose depth cycles through 0..3.
  t = performance.now();
  const roles = builtinRoles.map((r) => r.uid);
  let identities = 0;
  let bindings = 0;
  for (const group of levels[4]!) {
    const identity = await store.createIdentity({
      uid: newChildUid(group),
      groupUid: group,
      name: `workload ${identities}`,
      description: "",
      claimMatch: {
        issuer: "https://ci.bench",
        issuerPattern: "",
        subject: `workload-${identities}`,
        subjectPattern: "",
        audience: "",
        audiencePattern: "",
        claims: {},
        claimPatterns: {},
      },
      now,
    });
    const ancestorDepth = identities % 4;
    const ancestor = group
      .split("/")
      .slice(0, ancestorDepth + 1)
      .join("/");
    for (const at of [group, ancestor]) {
      await store.createRoleBinding({
        uid: newChildUid(at),
        groupUid: at,
        identityUid: identity.uid,
        roleUid: roles[(identities + bindings) % roles.length]!,
        now,
      });
      batched();
      bindings++;
    }
    identities++;
  }
  lap(`${identities} identities, ${bindings} bindings`, t);

  // A repo in each depth-3 group, 100 tags each.
  t = performance.now();
  let tags = 0;
  let repos = 0;
  for (const group of levels[3]!) {
    const repo = await store.createRepo({
      uid: newChildUid(group),
      groupUid: group,
      name: `repo-${repos}`,
      description: "",
      aliases: [],
      now,
    });
    const batch = Array.from({ length: 100 }, (_, i) => ({
      name: `v${i}.0.0`,
      digest: `sha256:${(repos * 100 + i).toString(16).padStart(64, "0")}`,
      deprecated: false,
    }));
    await store.importTags(repo.uid, batch, () => newChildUid(repo.uid), now);
    batched();
    tags += batch.length;
    repos++;
  }
  lap(`${repos} repos, ${tags} tags`, t);

  store.db.exec("COMMIT");
  store.db.pragma("wal_checkpoint(TRUNCATE)");
  await store.close();
  const seedMs = Math.round(performance.now() - started);
  log(`seed total: ${seedMs} ms`);
  return {
    version,
    root,
    admin: admin.uid,
    leaf: levels[5]![levels[5]!.length - 1]!,
    deepParent: levels[4]![0]!,
    groups,
    identities,
    bindings,
    repos,
    tags,
    seedMs,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { manifest, cached } = await ensureSeeded(process.argv[2]);
  console.log(cached ? "cached" : "seeded", manifest);
}
