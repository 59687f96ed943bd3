import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// connect-es marks its protocol modules "@private Internal code, does not follow semantic
// versioning". They are imported in one file, src/pipeline/connect-protocol.ts, so that an
// upgrade that changes them touches that file alone (issue 25).

const root = join(import.meta.dirname, "../..");
const owner = "src/pipeline/connect-protocol.ts";
// `@connectrpc/connect/protocol`, `/protocol-connect`, `/protocol-grpc`, `/protocol-grpc-web`,
// and any deep import into a package's dist/.
const internal =
  /from\s+["'](@connectrpc\/connect\/protocol[^"']*|@connectrpc\/[^"']+\/dist\/[^"']*)["']/g;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => /\.tsx?$/.test(name))
    .map((name) => `${dir}/${name.split("\\").join("/")}`);
}

describe("connect-es internals", () => {
  const importers = new Map<string, string[]>();
  for (const file of [
    ...sources("src"),
    ...sources("console"),
    ...sources("bench"),
    ...sources("test"),
  ]) {
    const found = [...readFileSync(join(root, file), "utf8").matchAll(internal)].map((m) => m[1]!);
    if (found.length > 0) importers.set(file, found);
  }

  it(`are imported by ${owner} alone`, () => {
    expect([...importers.keys()]).toEqual([owner]);
  });

  it("the file that imports them is the one the rule names", () => {
    // The pattern matches what the file really imports: a rename of the file or a change of the
    // import style would otherwise leave the first test passing on nothing.
    expect(importers.get(owner)).toEqual(
      expect.arrayContaining([
        "@connectrpc/connect/protocol",
        "@connectrpc/connect/protocol-connect",
        "@connectrpc/connect/protocol-grpc",
      ]),
    );
  });
});
