import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { migrationsFor } from "../../src/store/migrations.js";

/**
 * The steps each backend has applied to databases in the field, as fingerprints of their SQL
 * (comments and spacing aside), in order: a database's version N means the first N. A step
 * released is never edited, removed or moved, on either dialect; a new step is appended to
 * src/store/migrations.ts and, once released, its fingerprints here.
 */
const released = {
  sqlite: [
    "04de4c906883", // 1 groups and their ancestor closure
    "6f56c423dde5",
    "2c29d60479ab",
    "acffd87edf5b",
    "37a5873f8d6d",
    "272a3f680454",
    "561917383620",
    "905a1f759b78",
    "d36f18706450",
    "8696183a5bdf",
    "8de2b7b2d806",
    "defa98b566f6", // 12 integer keys for the group closure
    "a19fc16b3d94", // 13 logins in flight live in the browser
    "ac22adac09b9", // 14 groups keyed by their integer id (SQLite's alone)
    "598759606c70",
    "2557e54a372b",
    "9ce7236b7094",
    "0a8a26e99de2",
    "705298133a42",
    "cd3d4196b1b0",
    "386b26a6f73e",
    "eca1c8428cda",
    "c00cbee60cb9", // 23 claim times and verification of identity provider names and domains
  ],
  pg: [
    "0f1205c4777b", // 1 the whole schema SQLite's steps 1 to 12 make
    "a19fc16b3d94", // 2 (SQLite's 13)
    "c48e77676ad3",
    "2c4accf3864e",
    "38bb71c70c5d",
    "795f5565e0d7",
    "05a7a24b40f3",
    "ab3ff70b20ca",
    "0b8141b40d2c",
    "0c811835ff41",
    "c2ce955c4613", // 11 (SQLite's 23)
  ],
};

const fingerprint = (sql: string) =>
  createHash("sha256")
    .update(
      sql
        .replace(/--[^\n]*/g, "")
        .replace(/\s+/g, " ")
        .replace(/\s*([(),;])\s*/g, "$1")
        .trim(),
    )
    .digest("hex")
    .slice(0, 12);

describe("the one list of schema steps", () => {
  it.each(["sqlite", "pg"] as const)("gives %s its released steps, in order", (dialect) => {
    const steps = migrationsFor(dialect).map((m) => fingerprint(m.sql));
    expect(steps.slice(0, released[dialect].length)).toEqual(released[dialect]);
  });

  it("appends a step to both dialects alike", () => {
    // Beyond the released steps, a dialect without a step would shift the other's numbers.
    const s = migrationsFor("sqlite").slice(released.sqlite.length);
    const p = migrationsFor("pg").slice(released.pg.length);
    expect(s.map((m) => m.description)).toEqual(p.map((m) => m.description));
  });
});
