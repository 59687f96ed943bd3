/**
 * The guard's served setup (bench/guard-server.ts): its settings and its small dataset, seeded through a store of any build: the
 * callers pass that build's own store and uid functions (write-pages.ts and inproc-ab.ts load
 * another checkout's dist/), so the shapes here are loose and nothing is imported from src/.
 * bench:guard's --lend-harness copies this file into an older checkout with guard-server.ts.
 */

/** What seeding asks of a build's store: the calls every checkout since the guard has had. */
export interface SeedingStore {
  upsertPerson(person: object): Promise<{ uid: string }>;
  createOrganization(org: object, owner: object): Promise<unknown>;
  createGroup(group: object): Promise<{ uid: string }>;
  atomically(fn: (tx: SeedingStore) => Promise<void>): Promise<void>;
}

/** A build's uid functions (src/uid.ts) and its owner role's uid (src/auth/capabilities.ts). */
export interface SeedingIds {
  newRootUid(): string;
  newChildUid(parent: string): string;
  ownerRoleUid: string;
}

/** A person "owner" (issuer https://users.bench) and the organization `name` they own. */
export async function seedOwnedOrganization(
  store: SeedingStore,
  ids: SeedingIds,
  name: string,
  now: number,
): Promise<{ person: string; org: string }> {
  const person = await store.upsertPerson({
    uid: ids.newRootUid(),
    issuer: "https://users.bench",
    subject: "owner",
    name: "owner",
    email: "",
    now,
  });
  const org = ids.newRootUid();
  await store.createOrganization(
    { uid: org, name, description: "", now },
    { bindingUid: ids.newChildUid(org), identityUid: person.uid, roleUid: ids.ownerRoleUid },
  );
  return { person: person.uid, org };
}

/**
 * 1,110 groups under `org` (fan-out 10, depth 3, named `g<depth>-<i>`), in one transaction:
 * one commit instead of 1,110. The deepest level's uids, in the order made.
 */
export async function seedGuardGroups(
  store: SeedingStore,
  ids: SeedingIds,
  org: string,
  now: number,
): Promise<string[]> {
  let level = [org];
  await store.atomically(async (tx) => {
    for (let depth = 1; depth <= 3; depth++) {
      const next: string[] = [];
      for (const parent of level) {
        for (let i = 0; i < 10; i++) {
          const uid = ids.newChildUid(parent);
          await tx.createGroup({
            uid,
            parentUid: parent,
            name: `g${depth}-${next.length}`,
            description: "a group of the guard's dataset",
            now,
          });
          next.push(uid);
        }
      }
      level = next;
    }
  });
  return level;
}

/**
 * The settings (environment) of a bench server on 127.0.0.1, a free port and the SQLite file
 * `db`, for loadConfig: warnings and errors logged, per-request info lines not (they would
 * measure the logger); loopback OIDC issuers allowed (the test issuer).
 */
export function benchServerEnv(db: string): Record<string, string> {
  return {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: "0",
    GATEHOUSE_DB: db,
    GATEHOUSE_LOG_LEVEL: "warn",
    GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
  };
}
