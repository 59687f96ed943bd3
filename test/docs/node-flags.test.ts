import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  oneCpuNodeFlags,
  oneCpuRestartFlags,
  serverEnvironment,
  serverNodeFlags,
} from "../../src/node-flags.js";

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

  it("gain the one-CPU flags on one CPU only, unless the command line already chose", () => {
    expect(oneCpuRestartFlags(1, serverNodeFlags)).toEqual(oneCpuNodeFlags);
    expect(oneCpuRestartFlags(2, serverNodeFlags)).toEqual([]);
    expect(oneCpuRestartFlags(1, [...serverNodeFlags, "--single-threaded-gc"])).toEqual([]);
    expect(oneCpuRestartFlags(1, ["--no-single-threaded-gc"])).toEqual([]);
    expect(oneCpuRestartFlags(1, ["--single_threaded_gc"])).toEqual([]);
    // The README says what happens on one CPU, by the flags' names.
    for (const flag of oneCpuNodeFlags) expect(readFileSync("README.md", "utf8")).toContain(flag);
  });
});

/** The environment as a shell line's assignments: `NAME=value NAME2=value2`. */
function envLine(): string {
  return Object.entries(serverEnvironment)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}
