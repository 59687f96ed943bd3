import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { runBin } from "../helpers/run-bin.js";
import { freePort } from "../helpers/test-server.js";

// The start log tells a newcomer where the console is and, on a fresh database, the one
// command that makes the server usable.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-serve-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string; console?: string });

it("names the console URL, and on an empty database the bootstrap command", {
  timeout: 120_000,
}, async () => {
  const db = join(dir, "gatehouse.db");
  const port = await freePort();
  const env = { GATEHOUSE_HOST: "127.0.0.1", GATEHOUSE_PORT: String(port), GATEHOUSE_DB: db };
  const serve = () =>
    runBin(["serve"], env, { stopWhenOut: (out) => out.includes('"gatehouse listening"') });
  const first = lines((await serve()).stdout);
  const listening = first.find((l) => l.msg === "gatehouse listening");
  expect(listening?.console).toBe(`http://localhost:${port}/console/`);
  expect(
    first.some((l) => /no organization yet: .*gatehouse\.js bootstrap --org/.test(l.msg)),
  ).toBe(true);

  const boot = await runBin(["bootstrap", "--org", "acme"], env);
  expect(boot.code).toBe(0);
  const second = lines((await serve()).stdout);
  expect(second.some((l) => l.msg === "gatehouse listening")).toBe(true);
  expect(second.some((l) => /no organization yet/.test(l.msg))).toBe(false);
});
