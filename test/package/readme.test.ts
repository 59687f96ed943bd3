import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { childOutput } from "../helpers/child-output.js";
import { expectBootstrapOutput } from "./bootstrap-output.js";

// Following the README from top to bottom ran `npm ci` three times, and its way of running
// the command through npm (`npm run gatehouse -- bootstrap > data/owner.json`) put npm's
// banner before the JSON. The README's shell blocks install once, and every command whose
// output is kept runs without npm's banner; the npm form is run here as the README writes it.

const root = fileURLToPath(new URL("../../", import.meta.url));
const readme = readFileSync(join(root, "README.md"), "utf8");
const shellLines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
  (m[1] as string).split("\n"),
);
const dir = mkdtempSync(join(tmpdir(), "gatehouse-readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("installs once: one npm ci in all its shell snippets", () => {
  expect(shellLines.filter((l) => /\bnpm ci\b/.test(l))).toHaveLength(1);
});

it("runs the command through npm only silently, so its output is the command's", () => {
  const viaNpm = [...readme.matchAll(/npm run (?:-s )?gatehouse\b/g)].map((m) => m[0]);
  expect(viaNpm.length).toBeGreaterThan(0);
  const inSnippets = shellLines.filter((l) => /npm run .*gatehouse/.test(l));
  for (const line of inSnippets) expect(line).toContain("npm run -s gatehouse");
});

it("npm run -s gatehouse -- bootstrap prints the JSON alone", { timeout: 60_000 }, async () => {
  // The npm script runs bin/gatehouse.js on the sources (the hooks stand for `npm run build`).
  const hooks = fileURLToPath(new URL("../helpers/register-bin.mjs", import.meta.url));
  const out = await childOutput(
    spawn("npm", ["run", "-s", "gatehouse", "--", "bootstrap", "--org", "acme"], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        GATEHOUSE_DB: join(dir, "gatehouse.db"),
        NODE_OPTIONS: `--no-warnings --import=${hooks}`,
      },
      stdio: ["ignore", "pipe", "inherit"],
    }),
  );
  expect(out.code).toBe(0);
  expectBootstrapOutput(out.stdout);
});
