import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, expect, it } from "vitest";
import { runImport } from "../helpers/import-cli.js";
import { digestOf, type RegistryClients, registryClients } from "../helpers/registry-clients.js";
import { useTestServer } from "../helpers/test-server.js";

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-tags-"));
const db = join(tmp, "gatehouse.db");
let c: RegistryClients;
const ts = useTestServer({ GATEHOUSE_DB: db });
afterAll(async () => {
  rmSync(tmp, { recursive: true, force: true });
});

it("imports tags from gzipped JSON lines, reports bad records, and moves changed ones", async () => {
  const acme = await ts.makeOrg("acme");
  const org = acme.uid;
  c = registryClients(ts.url, "grpc", acme.owner.token);
  const repo = (await c.repos.createRepo({ parent: org, repo: { name: "app" } })).uid;
  const lines = (v2: string) =>
    [
      { name: "v1", digest: digestOf("1") },
      { name: "v2", digest: digestOf(v2), deprecated: true },
      { name: "-bad", digest: "sha256:nope" },
      "[1, 2]",
    ]
      .map((r) => (typeof r === "string" ? r : JSON.stringify(r)))
      .join("\n");
  const file = join(tmp, "tags.data");
  writeFileSync(file, gzipSync(lines("2")));

  const first = await runImport(db, ["tags", "--repo", repo, file]);
  expect(first.code).toBe(1);
  expect(first.stdout).toBe("tags: 4 read, 2 created, 0 updated, 0 unchanged, 2 rejected\n");
  expect(first.stderr).toContain(
    "rejected record 3 (-bad): name: must be 1-128 letters, digits and . _ -, the first a letter, digit or _ (an OCI tag); digest:",
  );
  expect(first.stderr).toContain("rejected record 4: not a JSON object");
  const before = await c.tags.listTags({ uidp: { childrenOf: repo }, orderBy: "name" });
  expect(before.tags.map((t) => [t.name, t.deprecated])).toEqual([
    ["v1", false],
    ["v2", true],
  ]);

  const again = await runImport(db, ["tags", "--repo", repo, file]);
  expect(again.stdout).toBe("tags: 4 read, 0 created, 0 updated, 2 unchanged, 2 rejected\n");
  expect((await c.tags.listTags({ uidp: { childrenOf: repo }, orderBy: "name" })).tags).toEqual(
    before.tags,
  );

  writeFileSync(file, lines("3"));
  const moved = await runImport(db, ["tags", "--repo", repo, file]);
  expect(moved.stdout).toBe("tags: 4 read, 0 created, 1 updated, 1 unchanged, 2 rejected\n");
  const v2 = await c.tags.listTags({ uidp: { childrenOf: repo }, name: "v2" });
  expect(v2.tags[0]).toMatchObject({ uid: before.tags[1]!.uid, digest: digestOf("3") });

  const missing = await runImport(db, ["tags", "--repo", `${org}/ffffffffffffffff`, file]);
  expect(missing).toMatchObject({ code: 2 });
  expect(missing.stderr).toMatch(/repo .* not found/);
});
