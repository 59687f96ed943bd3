import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { serverNodeFlags } from "../../src/node-flags.js";

// The server's node flags live in src/node-flags.ts; every way the repository starts the
// server must pass the same ones, and the README must name them.

describe("the server's node flags", () => {
  it("are what npm start passes", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain(
      `exec node ${serverNodeFlags.join(" ")} bin/gatehouse.js serve`,
    );
  });

  it("are what the Dockerfile's entry point passes", () => {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync("Dockerfile", "utf8"))?.[1];
    expect(JSON.parse(entry ?? "[]")).toEqual(["node", ...serverNodeFlags, "bin/gatehouse.js"]);
  });

  it("are what the README tells people to run in production", () => {
    expect(readFileSync("README.md", "utf8")).toContain(
      `node ${serverNodeFlags.join(" ")} bin/gatehouse.js serve`,
    );
  });
});
