import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { serverEnvironment, serverNodeFlags } from "../../src/node-flags.js";

// The server's node flags and environment live in src/node-flags.ts; every way the repository
// starts the server must pass the same ones, and the README must name them.

describe("the server's node flags", () => {
  it("are what npm start passes", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain(
      `${envLine()} exec node ${serverNodeFlags.join(" ")} bin/gatehouse.js serve`,
    );
  });

  it("are what the Dockerfile's entry point passes", () => {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync("Dockerfile", "utf8"))?.[1];
    expect(JSON.parse(entry ?? "[]")).toEqual(["node", ...serverNodeFlags, "bin/gatehouse.js"]);
    // The runtime stage's ENV block (the last one) sets the environment.
    const envBlocks = readFileSync("Dockerfile", "utf8").split(/^ENV /m);
    const runtimeEnv = envBlocks[envBlocks.length - 1]!.split(/\n(?!\s)/)[0]!;
    for (const [name, value] of Object.entries(serverEnvironment)) {
      expect(runtimeEnv).toMatch(new RegExp(`(^|\\s)${name}=${value}(\\s|$)`));
    }
  });

  it("are what the README tells people to run in production", () => {
    expect(readFileSync("README.md", "utf8")).toContain(
      `${envLine()} node ${serverNodeFlags.join(" ")} bin/gatehouse.js serve`,
    );
  });
});

/** The environment as a shell line's assignments: `NAME=value NAME2=value2`. */
function envLine(): string {
  return Object.entries(serverEnvironment)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}
