import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { createSqliteStore, type SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

/** An organization seeded by seedGroupTree, and the store reopened on it. */
export interface GroupTree {
  /** The store on the seeded file, reopened with its default (FULL) commits. */
  store: SqliteStore;
  /** The organization's uid: the root of the tree. */
  root: string;
  /** The person bound as owner at the root. */
  admin: string;
  /** Every group's uid, the root first, in the order made (breadth first). */
  groups: string[];
  /** The clock of the seed: group i (from 1) was made at `now + i`. */
  now: number;
}

/**
 * Seed one organization of `groups` groups (the root included), fan-out 10, breadth first,
 * through the Store API into the SQLite file `path`: group i is named `g` and i in seven
 * digits, described by `description(i)` (default empty). Seeded with NORMAL commits in batches
 * of 5,000 (a crash may lose some: a seed simply redoes them), then reopened for measuring.
 */
export async function seedGroupTree(
  path: string,
  opts: { groups: number; name: string; description?: (i: number) => string },
): Promise<GroupTree> {
  const seeding = createSqliteStore(path, { roles: storeRoles, synchronous: "NORMAL" });
  const now = Date.now();
  const admin = await seeding.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.bench",
    subject: "admin",
    name: "admin",
    email: "",
    now,
  });
  const root = newRootUid();
  await seeding.createOrganization(
    { uid: root, name: opts.name, description: "", now },
    { bindingUid: newChildUid(root), identityUid: admin.uid, roleUid: ownerRole.uid },
  );
  seeding.db.exec("BEGIN");
  const groups = [root];
  let frontier = [root];
  while (groups.length < opts.groups) {
    const next: string[] = [];
    for (const parent of frontier) {
      for (let i = 0; i < 10 && groups.length < opts.groups; i++) {
        const made = groups.length;
        const uid = newChildUid(parent);
        await seeding.createGroup({
          uid,
          parentUid: parent,
          name: `g${made.toString().padStart(7, "0")}`,
          description: opts.description?.(made) ?? "",
          now: now + made,
        });
        next.push(uid);
        groups.push(uid);
        if (groups.length % 5000 === 0) seeding.db.exec("COMMIT; BEGIN");
      }
      if (groups.length >= opts.groups) break;
    }
    frontier = next;
  }
  seeding.db.exec("COMMIT");
  await seeding.close();
  return {
    store: createSqliteStore(path, { roles: storeRoles }),
    root,
    admin: admin.uid,
    groups,
    now,
  };
}
