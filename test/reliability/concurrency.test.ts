import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { restCall } from "../helpers/rest-client.js";
import {
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";
import {
  closureDiff,
  countDiff,
  orphans,
  pgTreeDb,
  sqliteTreeDb,
  type TreeDb,
} from "./helpers/tree-checks.js";

// Many creates, deletes and bindings racing in one subtree through the REST API, on a file
// database: whatever wins, the closure must match the parent links and nothing may dangle.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-concurrency-"));
let ts: TestServer;
let org: TestOrg;
let db: TreeDb;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const rest = (method: string, path: string, body?: unknown) =>
  restCall(ts.url, method, path, body, org.owner.headers);

/** Run `tasks` with at most `width` in flight. */
async function pool(width: number, tasks: (() => Promise<void>)[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: width }, worker));
}

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

// What a racing call may answer: done, a sibling name taken, a group not empty, or gone.
const expectedStatuses = new Set([200, 400, 404, 409]);

describe.each(backends)("concurrent writes in one subtree, on %s", (backend) => {
  beforeAll(async () => {
    ts =
      backend === "sqlite"
        ? await startTestServer({ GATEHOUSE_DB: join(dir, "gatehouse.db") })
        : await startTestServer({}, { backend });
    org = await ts.makeOrg("race");
    db =
      backend === "sqlite"
        ? sqliteTreeDb((ts.store as SqliteStore).db)
        : await pgTreeDb(ts.config.databaseUrl);
  });
  afterAll(async () => {
    await db?.close();
    await ts?.close();
  });

  it("leave the closure consistent and no orphan rows", async () => {
    const top = await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "subtree" });
    expect(top.status).toBe(200);
    const subtree = top.json.uid as string;
    const member = await ts.makeIdentity(org.uid);
    const live = [subtree];
    const statuses: number[] = [];
    let n = 0;
    let bound = 0;
    let deleted = 0;
    const create = async () => {
      const r = await rest("POST", `/iam/v2beta1/groups/${pick(live)}`, { name: `g${n++ % 40}` });
      statuses.push(r.status);
      if (r.status === 200) live.push(r.json.uid as string);
    };
    const remove = async () => {
      const uid = pick(live);
      if (uid === subtree) return;
      const r = await rest("DELETE", `/iam/v2beta1/groups/${uid}`);
      statuses.push(r.status);
      if (r.status === 200) {
        live.splice(live.indexOf(uid), 1);
        deleted++;
      }
    };
    const bind = async () => {
      const r = await rest("POST", `/iam/v2beta1/roleBindings/${pick(live)}`, {
        identityUid: member.uid,
        roleUid: viewer.uid,
      });
      statuses.push(r.status);
      if (r.status === 200) bound++;
    };
    const ops = [create, create, create, remove, remove, bind];
    await pool(
      16,
      Array.from({ length: 300 }, () => pick(ops)),
    );
    expect(statuses.filter((s) => !expectedStatuses.has(s))).toEqual([]);
    // The race did happen: groups came and went, with bindings on them.
    expect({ live: live.length > 20, deleted: deleted > 10, bound: bound > 10 }).toEqual({
      live: true,
      deleted: true,
      bound: true,
    });
    expect(await closureDiff(db)).toEqual({ missing: [], extra: [] });
    expect(await countDiff(db)).toEqual([]);
    expect(await orphans(db)).toEqual({});

    // Delete the whole subtree, the deepest groups first, each level at once.
    const depthOf = (uid: string) => uid.split("/").length;
    const depths = [...new Set(live.map(depthOf))].sort((a, b) => b - a);
    for (const depth of depths) {
      const level = live.filter((uid) => depthOf(uid) === depth);
      const results = await Promise.all(
        level.map((uid) => rest("DELETE", `/iam/v2beta1/groups/${uid}`)),
      );
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    }
    const left = async (table: string, column: string) =>
      Number(
        (
          await db.all<{ n: number | string }>(
            `SELECT count(*) AS n FROM ${table} WHERE ${column} LIKE ? || '%'`,
            [subtree],
          )
        )[0]?.n,
      );
    expect(await left("groups", "uid")).toBe(0);
    expect(
      (await left("group_closure_by_uid", "descendant")) +
        (await left("group_closure_by_uid", "ancestor")),
    ).toBe(0);
    expect(await left("role_bindings", "group_uid")).toBe(0);
    expect(await closureDiff(db)).toEqual({ missing: [], extra: [] });
    expect(await countDiff(db)).toEqual([]);
    expect(await orphans(db)).toEqual({});
  });
});
