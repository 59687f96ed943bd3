import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { removeStaleRoots } from "./temp-root.js";

it("the tests' temporary files live under this run's root", () => {
  const root = process.env.GATEHOUSE_TEST_TMP_ROOT;
  expect(root).toMatch(/gatehouse-test-\d+$/);
  expect(tmpdir()).toBe(root);
});

it("a run removes the roots that interrupted runs left, and no live run's", () => {
  const base = mkdtempSync(join(tmpdir(), "roots-"));
  try {
    // A pid above the kernel's pid_max runs nowhere.
    mkdirSync(join(base, "gatehouse-test-99999999", "left-behind"), { recursive: true });
    mkdirSync(join(base, `gatehouse-test-${process.pid}`));
    mkdirSync(join(base, "someone-else"));
    expect(removeStaleRoots(base)).toEqual(["gatehouse-test-99999999"]);
    expect(readdirSync(base).sort()).toEqual([`gatehouse-test-${process.pid}`, "someone-else"]);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
