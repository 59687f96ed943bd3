import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import {
  type CompositeSetting,
  documentedSettings,
  removedSettings,
  type Setting,
  settings,
} from "../../src/config.js";

// The README's table of settings and docs/events.md's webhook settings say what the settings
// table (src/config.ts) says: every setting is listed, under its variable and flag, with the
// default it really has. A setting added to the table and not to the README fails here, as
// does a default changed in one place only.

const root = fileURLToPath(new URL("../..", import.meta.url));
const read = (f: string) => readFileSync(join(root, f), "utf8");

/** The rows of the markdown tables in `text` whose first cell names a variable, as cells. */
function settingRows(text: string): string[][] {
  return text
    .split("\n")
    .filter((l) => /^\| `GATEHOUSE_[A-Z0-9_]+` \|/.test(l))
    .map((l) =>
      l
        .slice(1, -1)
        .split("|")
        .map((c) => c.trim()),
    );
}

/** A default as a table cell writes it: in backticks, or empty for none. */
const cellOf = (s: Setting | CompositeSetting) => {
  if (typeof s.default !== "string") return undefined; // derived: said in words
  return s.default === "" ? "" : `\`${s.default}\``;
};

it("lists every setting in the README, in the table's order, with its flag and default", () => {
  const rows = settingRows(read("README.md"));
  expect(rows.map((r) => r[0])).toEqual(documentedSettings.map((s) => `\`${s.env}\``));
  for (const s of documentedSettings) {
    const row = rows.find((r) => r[0] === `\`${s.env}\``) as string[];
    expect({ env: s.env, flag: row[1] }).toEqual({ env: s.env, flag: `\`--${s.flag}\`` });
    const cell = cellOf(s);
    if (cell === undefined)
      expect({ env: s.env, derived: row[2] }).not.toHaveProperty("derived", "");
    else expect({ env: s.env, default: row[2] }).toEqual({ env: s.env, default: cell });
  }
});

it("gives docs/events.md's webhook settings the defaults they have", () => {
  const rows = settingRows(read("docs/events.md"));
  expect(rows.length).toBeGreaterThan(5);
  for (const [variable, dflt] of rows) {
    const s = settings.find((x) => `\`${x.env}\`` === variable);
    expect({ variable, known: s !== undefined }).toEqual({ variable, known: true });
    expect({ variable, default: dflt }).toEqual({ variable, default: cellOf(s as Setting) });
  }
});

it("names in the README only settings that exist, or that it says were removed", () => {
  const known = new Set([...documentedSettings, ...removedSettings].map((s) => s.env));
  for (const [variable] of settingRows(read("README.md"))) {
    expect(known).toContain((variable as string).replaceAll("`", ""));
  }
  for (const r of removedSettings) expect(read("README.md")).toContain(`\`${r.env}\``);
});
