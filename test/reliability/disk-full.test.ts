import { beforeAll, expect, it } from "vitest";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// A write that fails for lack of space is the caller's cue to retry later (UNAVAILABLE,
// reason STORAGE_FULL), not an INTERNAL; readiness says so; nothing acknowledged is lost and
// writes succeed again once there is room. The disk fills through PRAGMA max_page_count,
// which makes SQLite answer SQLITE_FULL exactly as a full file system does.

let org: TestOrg;
let db: SqliteStore["db"];
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("full");
  db = (ts.store as SqliteStore).db;
});

const create = (name: string) =>
  restCall(ts.url, "POST", `/iam/v2beta1/groups/${org.uid}`, { name }, org.owner.headers);
const ready = async () => (await fetch(`${ts.url}/readyz`)).status;

it("answers UNAVAILABLE (STORAGE_FULL), reports unready, keeps reads, and recovers", async () => {
  const kept = await create("before");
  expect(kept.status).toBe(200);
  expect(await ready()).toBe(200);

  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages}`);
  let full = await create("x".repeat(200));
  // Fill the last free pages first, if any.
  for (let i = 0; full.status === 200 && i < 500; i++)
    full = await create(`fill-${i}-${"x".repeat(200)}`);
  expect(full.status).toBe(503);
  expect(full.json.code).toBe(14);
  expect(full.json.details[0]).toMatchObject({
    reason: "STORAGE_FULL",
    domain: "iam.gatehouse.test",
  });
  expect(await ready()).toBe(503);
  // Reads still work.
  const read = await restCall(
    ts.url,
    "GET",
    `/iam/v2beta1/groups/${kept.json.uid}`,
    undefined,
    org.owner.headers,
  );
  expect(read.status).toBe(200);

  db.pragma("max_page_count = 1073741823");
  const after = await create("after");
  expect(after.status).toBe(200);
  expect(await ready()).toBe(200);
  expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
});
