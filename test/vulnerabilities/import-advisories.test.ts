import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { runImport } from "../helpers/import-cli.js";
import { type RegistryClients, registryClients } from "../helpers/registry-clients.js";
import { useTestServer } from "../helpers/test-server.js";

// The Go vulnerability database: "Go Vulnerability Database, The Go Authors", CC BY 4.0. A
// trimmed sample ships with the tests (test/fixtures/osv/README.md); GATEHOUSE_TEST_OSV may
// name the full file instead.
const goVulnDb = resolve(
  process.env.GATEHOUSE_TEST_OSV ?? "test/fixtures/osv/go-vulndb-sample.jsonl.gz",
);
const fixture = resolve("test/fixtures/osv-mixed.jsonl");

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-import-"));
const db = join(tmp, "gatehouse.db");
let c: RegistryClients;
// Registered first, so it runs last: the file goes once the server has closed it.
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
// The server and the import share one database file, as in production.
const ts = useTestServer({ GATEHOUSE_DB: db });

/** A new organization, read through its owner (who holds advisories.list). */
const newOrg = async (name: string) => {
  const org = await ts.makeOrg(name);
  c = registryClients(ts.url, "connect", org.owner.token);
  return org.uid;
};

describe("gatehouse import advisories", () => {
  it("imports the good records, reports the bad ones, and changes nothing the second time", async () => {
    const org = await newOrg("fixture");
    const first = await runImport(db, ["advisories", "--group", org, fixture]);
    expect(first.code).toBe(1);
    expect(first.stdout).toBe(
      "advisories: 6 read, 3 created, 0 updated, 0 unchanged, 3 rejected\n",
    );
    expect(first.stderr.split("\n").filter(Boolean)).toEqual([
      expect.stringMatching(/^rejected record 3: not valid JSON/),
      "rejected record 4: id: is required",
      "rejected record 5 (TEST-2024-0003): aliases[0]: must be letters, digits and . _ : + - (such as CVE-2024-1234)",
    ]);

    const listed = await c.advisories.listAdvisories({
      uidp: { childrenOf: org },
      orderBy: "name",
    });
    expect(listed.advisories.map((a) => a.advisoryId)).toEqual([
      "TEST-2024-0001",
      "TEST-2024-0002",
      "TEST-2024-0004",
    ]);
    const [one, two, four] = listed.advisories;
    expect(one).toMatchObject({
      aliases: ["CVE-2024-0001", "GHSA-aaaa-bbbb-cccc"],
      summary: "Path traversal in example.com/fs",
      componentName: "example.com/fs",
      componentType: "Go",
      artifactName: "",
      latestEventType: EventType.FIXED,
    });
    expect(one!.severities).toHaveLength(1);
    expect(one!.events.map((e) => [e.type, e.fixedVersion, e.time?.seconds])).toEqual([
      [EventType.DETECTED, "", BigInt(Date.parse("2024-01-02T03:04:05Z") / 1000)],
      [EventType.FIXED, "1.2.3", BigInt(Date.parse("2024-02-01T00:00:00Z") / 1000)],
    ]);
    expect(two).toMatchObject({
      summary: "Denial of service in example.com/http2.",
      latestEventType: EventType.DETECTED,
    });
    expect(four!.events.map((e) => [e.type, e.fixedVersion, e.note])).toEqual([
      [EventType.DETECTED, "", "published"],
      [EventType.FIXED, "1.21.1", ""],
      [EventType.FIXED, "1.22.1", ""],
      [EventType.FALSE_POSITIVE, "", "withdrawn"],
    ]);

    const again = await runImport(db, ["advisories", "--group", org, fixture]);
    expect(again.stdout).toBe(
      "advisories: 6 read, 0 created, 0 updated, 3 unchanged, 3 rejected\n",
    );
    const after = await c.advisories.listAdvisories({ uidp: { childrenOf: org }, orderBy: "name" });
    expect(after.advisories).toEqual(listed.advisories);
  });

  it("updates a changed record in place, and reads a JSON array", async () => {
    const org = await newOrg("array");
    const file = join(tmp, "array.json");
    const doc = (summary: string) => [
      { id: "ARR-1", published: "2024-01-01T00:00:00Z", summary, aliases: ["CVE-1-1"] },
    ];
    writeFileSync(file, JSON.stringify(doc("first")));
    expect((await runImport(db, ["advisories", "--group", org, file])).stdout).toMatch(/1 created/);
    const before = (await c.advisories.listAdvisories({ uidp: { childrenOf: org } }))
      .advisories[0]!;
    writeFileSync(file, JSON.stringify(doc("second"), null, 2));
    expect((await runImport(db, ["advisories", "--group", org, file])).stdout).toMatch(
      /0 created, 1 updated/,
    );
    const after = (await c.advisories.listAdvisories({ uidp: { childrenOf: org } })).advisories[0]!;
    expect(after).toMatchObject({
      uid: before.uid,
      summary: "second",
      createTime: before.createTime,
    });
  });

  it.each([
    [["advisories", "--group"], /argument missing|--group/],
    [["advisories", "x.json"], /--group <uid> is required/],
    [["nope"], /expected "advisories" or "tags"/],
    [["advisories", "--group", "f".repeat(40), "x.json"], /group f+ not found/],
  ])("exits 2 on %j", async (args, message) => {
    const run = await runImport(db, args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it("refuses a database it cannot open, with exit code 2", async () => {
    const missing = await runImport(join(tmp, "none.db"), ["advisories", "--group", "a", "f"]);
    expect(missing).toMatchObject({ code: 2, stdout: "" });
    expect(missing.stderr).toMatch(/no database at .*none\.db/);
    expect(existsSync(join(tmp, "none.db"))).toBe(false);
    const junk = join(tmp, "junk.db");
    writeFileSync(junk, "this is not an SQLite database, not even close to one".repeat(100));
    const bad = await runImport(junk, ["advisories", "--group", "a", "f"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/cannot open database .*junk\.db: /);
  });

  it("loads the Go vulnerability database completely and idempotently", async () => {
    const org = await newOrg("govulndb");
    const first = await runImport(db, ["advisories", "--group", org, goVulnDb]);
    const n = expected.total;
    expect(first).toEqual({
      code: 0,
      stdout: `advisories: ${n} read, ${n} created, 0 updated, 0 unchanged, 0 rejected\n`,
      stderr: "",
    });
    const again = await runImport(db, ["advisories", "--group", org, goVulnDb]);
    expect(again.stdout).toBe(
      `advisories: ${n} read, 0 created, 0 updated, ${n} unchanged, 0 rejected\n`,
    );

    const count = async (filters: object) =>
      (await c.advisories.listAdvisories({ uidp: { childrenOf: org }, pageSize: 1, ...filters }))
        .totalCount;
    expect(await count({})).toBe(BigInt(n));
    // Counts checked against the file with a plain scan (see the comment below).
    expect(await count({ name: "GO-2020-0001" })).toBe(1n);
    expect(await count({ aliases: "CVE-2020-36567" })).toBe(1n);
    const gin = await c.advisories.listAdvisories({
      uidp: { childrenOf: org },
      aliases: "GHSA-6vm3-jj99-7229",
    });
    expect(gin.advisories[0]).toMatchObject({
      advisoryId: "GO-2020-0001",
      componentName: "github.com/gin-gonic/gin",
      latestEventType: EventType.FIXED,
    });
    expect(await count({ componentName: "stdlib" })).toBe(expected.stdlib);
    expect(await count({ latestEventType: EventType.FIXED })).toBe(expected.fixed);
    expect(await count({ latestEventType: EventType.FALSE_POSITIVE })).toBe(expected.withdrawn);
    expect(await count({ query: "gin-gonic" })).toBe(expected.ginGonic);
    expect(await count({ query: "CVE-2023-4" })).toBe(expected.cve20234);
  });
});

/**
 * What the filters must answer on the Go file, computed from it with a plain scan when the
 * suite loads, so the expectations follow the data rather than being copied from the server.
 */
const expected = await (async () => {
  const { gunzipSync } = await import("node:zlib");
  const { readFileSync } = await import("node:fs");
  const docs = gunzipSync(readFileSync(goVulnDb))
    .toString("utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, never>);
  type Doc = {
    id: string;
    aliases?: string[];
    withdrawn?: string;
    affected?: { package: { name: string }; ranges?: { events: { fixed?: string }[] }[] }[];
  };
  const first = (d: Doc) => d.affected?.[0];
  const hasFix = (d: Doc) =>
    (first(d)?.ranges ?? []).some((r) => r.events.some((e) => e.fixed !== undefined));
  const hay = (d: Doc) =>
    [d.id, ...(d.aliases ?? []), first(d)?.package.name ?? ""].map((s) => s.toLowerCase());
  const n = (pred: (d: Doc) => boolean) => BigInt((docs as unknown as Doc[]).filter(pred).length);
  return {
    total: docs.length,
    stdlib: n((d) => first(d)?.package.name === "stdlib"),
    fixed: n((d) => !d.withdrawn && hasFix(d)),
    withdrawn: n((d) => Boolean(d.withdrawn)),
    ginGonic: n((d) => hay(d).some((h) => h.includes("gin-gonic"))),
    cve20234: n((d) => hay(d).some((h) => h.includes("cve-2023-4"))),
  };
})();

describe("an owner cleaning up", () => {
  it("deletes their organization, imported advisories and all, without advisory capabilities", async () => {
    const org = await ts.makeOrg("cleanup");
    const team = await ts.store.createGroup({
      uid: `${org.uid}/00000000000000c1`,
      parentUid: org.uid,
      name: "team",
      description: "",
      now: Date.now(),
    });
    expect((await runImport(db, ["advisories", "--group", team.uid, fixture])).stdout).toMatch(
      /3 created/,
    );
    expect((await runImport(db, ["advisories", "--group", org.uid, fixture])).stdout).toMatch(
      /3 created/,
    );
    const del = (uid: string) =>
      fetch(`${ts.url}/iam/v2beta1/groups/${uid}`, {
        method: "DELETE",
        headers: org.owner.headers,
      });
    expect((await del(team.uid)).status).toBe(200);
    // The organization itself: its owner binding goes with it.
    expect((await del(org.uid)).status).toBe(200);
    const listed = await ts.store.listAdvisories({
      descendantsOf: org.uid,
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 10,
    });
    expect(listed.items).toHaveLength(0);
  });
});
