import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restCall } from "../helpers/rest-client.js";
import {
  postgresBackend,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// What a caller sees of the PostgreSQL backend's own limits: text with a NUL character,
// which PostgreSQL cannot hold or compare, is a clear INVALID_ARGUMENT, never an internal
// error. Through the API the name filter and each resource filter refuse it before the store
// (so these answers are the same on SQLite); the store's own mapping of what PostgreSQL
// refuses is pinned in test/store/postgres-store.test.ts.

let ts: TestServer;
let org: TestOrg;

beforeAll(async () => {
  ts = await startTestServer({}, { backend: postgresBackend });
  org = await ts.makeOrg("nul");
});
afterAll(async () => {
  await ts?.close();
});

describe("the API on PostgreSQL", () => {
  it("refuses a NUL character in a name filter, on either backend's rule", async () => {
    const r = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/groups?uidp.descendantsOf=${org.uid}&name=a%00b`,
      undefined,
      org.owner.headers,
    );
    expect(r.status).toBe(400);
    expect(r.json.message).toContain("NUL");
  });

  it("refuses a NUL character in each resource filter as INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const path of [
      `/vulnerabilities/v2beta1/advisories?uidp.descendantsOf=${org.uid}&query=x%00y`,
      `/iam/v2beta1/roleBindings?uidp.descendantsOf=${org.uid}&identity=x%00y`,
      `/registry/v2beta1/tags?uidp.descendantsOf=${org.uid}&digest=sha256:x%00y`,
    ]) {
      const r = await restCall(ts.url, "GET", path, undefined, org.owner.headers);
      expect({ path, status: r.status, code: r.json.code }).toEqual({ path, status: 400, code: 3 });
    }
  });

  it("serves the same answers as on SQLite for an ordinary call", async () => {
    const made = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name: "team" },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    const list = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/groups?uidp.childrenOf=${org.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(list.json).toMatchObject({ totalCount: "1", groups: [{ name: "team" }] });
  });
});
