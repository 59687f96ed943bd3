/**
 * What a group create writes to SQLite's WAL, per create, for each built checkout named: the
 * store of that checkout (its own schema and code, from its dist/), in this process, seeded as
 * bench/guard-server.ts seeds (an organization, 1,110 groups), then `creates` CreateGroups as
 * the RPC makes them (with the call's event, through `store.recording`) under one parent, 50
 * in flight so that they share commits as served. A reader holds a snapshot meanwhile, so that
 * no checkpoint restarts the WAL and its growth is what the creates wrote. Pages written are
 * counted, not timed: the figure does not move with the machine's load, and every page is
 * copied, checksummed, written and synced at its commit (bench/RESULTS.md, "REST CreateGroup").
 *
 *   node dist/bench/write-pages.js [--creates=3000] [--no-events] [--drop=<index>,...] <checkout>...
 *
 * `--drop` drops those indexes after the migrations, to price one.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import Sqlite from "better-sqlite3";
import { type SeedingStore, seedGuardGroups, seedOwnedOrganization } from "./guard-dataset.js";

const opt = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const creates = Number(opt("creates") ?? 3000);
const events = !process.argv.includes("--no-events");
const drop = opt("drop")?.split(",") ?? [];
const checkouts = process.argv.slice(2).filter((a) => !a.startsWith("--"));
if (checkouts.length === 0) {
  console.error("usage: write-pages [--creates=N] [--no-events] [--drop=idx,...] <checkout>...");
  process.exit(2);
}

// Loose shapes: each checkout's own modules, whatever its types were then.
type Any = Record<string, (...a: never[]) => unknown>;
interface StoreLike extends SeedingStore {
  recording(scope: object): StoreLike;
  close(): Promise<void>;
}

async function measure(checkout: string): Promise<Record<string, unknown>> {
  const mod = async (p: string) =>
    (await import(pathToFileURL(join(checkout, "dist", p)).href)) as Any & Record<string, never>;
  const { ownerRole, storeRoles } = await mod("src/auth/capabilities.js");
  const { createSqliteStore } = await mod("src/store/sqlite/sqlite-store.js");
  const { newChildUid, newRootUid } = await mod("src/uid.js");
  const { changeScope } = await mod("src/events/audit-scope.js");
  const open = () =>
    (createSqliteStore as unknown as (p: string, o: object) => StoreLike)(db, {
      roles: storeRoles,
    });
  const child = newChildUid as unknown as (p: string) => string;
  const root = newRootUid as unknown as () => string;
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-pages-"));
  const db = join(dir, "db");
  let store = open();
  if (drop.length > 0) {
    await store.close();
    const raw = new Sqlite(db);
    for (const index of drop) raw.exec(`DROP INDEX ${index}`);
    raw.close();
    store = open();
  }
  const now = Date.now();
  const ids = {
    newRootUid: root,
    newChildUid: child,
    ownerRoleUid: (ownerRole as unknown as { uid: string }).uid,
  };
  const { person, org } = await seedOwnedOrganization(store, ids, "pages", now);
  const level = await seedGuardGroups(store, ids, org, now);
  const parent = level[0]!;
  let made = 0;
  const one = async () => {
    const i = made++;
    const scope = (changeScope as unknown as (o: object) => object)({
      type: "dev.gatehouse.iam.group.created.v1",
      source: "/gatehouse.iam.v2beta1.GroupsService",
      requestId: `r${i}`,
      protocol: "rest",
      actorUid: person,
    });
    const view = events ? store.recording(scope) : store;
    await view.createGroup({
      uid: child(parent),
      parentUid: parent,
      name: `guard-${i}`,
      description: "",
      now: Date.now(),
    });
  };
  const run = async (count: number) => {
    let left = count;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (left-- > 0) await one();
      }),
    );
  };
  await run(500); // the tree's pages as a served store has them after a while
  const reader = new Sqlite(db, { readonly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM groups").get();
  const before = statSync(`${db}-wal`).size;
  await run(creates);
  const after = statSync(`${db}-wal`).size;
  reader.exec("COMMIT");
  reader.close();
  const pageSize = (new Sqlite(db, { readonly: true }).pragma("page_size", { simple: true }) ??
    4096) as number;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  const bytes = (after - before) / creates;
  return {
    checkout,
    events,
    drop: drop.join(",") || "-",
    creates,
    walBytesPerCreate: Math.round(bytes),
    pagesPerCreate: Number((bytes / (pageSize + 24)).toFixed(2)),
  };
}

for (const checkout of checkouts) console.log(JSON.stringify(await measure(resolve(checkout))));
