import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

// The rooms of src/ and console/src/ keep their doors (issue 25, item 4): the neutral rooms
// import nothing from the layers above them, no tab of the console imports another, and no
// module reaches itself again through its imports. Read from the sources, type-only imports
// included, as `npx madge --circular` reads them.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every .ts/.tsx file under `dir` (relative to the root), with `/`. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f) && !f.endsWith(".test.ts"))
    .map((f) => `${dir}/${f}`.split("\\").join("/"))
    .sort();
}

const specifier =
  /(?:^|[\n;])\s*(?:import|export)\b[^"';]*?from\s*"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g;

/** The files of the repository a source file imports (packages and node: left out). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(specifier)) {
    const spec = m[1] ?? m[2]!;
    if (!spec.startsWith(".")) continue;
    const base = normalize(join(dirname(file), spec)).replace(/\.js$/, "");
    const found = [".ts", ".tsx"].map((ext) => base + ext).find((f) => existsSync(join(root, f)));
    if (!found) throw new Error(`${file}: cannot resolve ${spec}`);
    out.push(relative(root, join(root, found)).split("\\").join("/"));
  }
  return out;
}

/** The import graph of `files`, each file to those of them it imports. */
function graphOf(files: readonly string[]): Map<string, string[]> {
  return new Map(files.map((f) => [f, importsOf(f).filter((d) => files.includes(d))]));
}

/** Cycles of a graph, each as the path that closes it (one at least for each cycle's files). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, "open");
    stack.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === "open") found.push([...stack.slice(stack.indexOf(d)), d]);
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return found;
}

it("keeps the neutral rooms below the layers: validation and JSON helpers import no service, transport or server", () => {
  // What a neutral module may stand on: its own rooms, errors and uids, the store's contract.
  const allowed =
    /^(src\/(validation|json)\/|src\/errors\.ts$|src\/uid\.ts$|src\/store\/[^/]+\.ts$|gen\/)/;
  const neutral = [...sources("src/validation"), ...sources("src/json")];
  expect(neutral).toContain("src/validation/field-rules.ts");
  expect(neutral).toContain("src/json/timestamp-json.ts");
  const reaching = neutral.flatMap((f) =>
    importsOf(f)
      .filter((d) => !allowed.test(d))
      .map((d) => `${f} -> ${d}`),
  );
  expect(reaching).toEqual([]);
});

it("gives every console tab a file of its own, importing no other tab", () => {
  const tabs = sources("console/src/tabs");
  expect(tabs.length).toBeGreaterThan(10);
  const crossing = tabs.flatMap((f) =>
    importsOf(f)
      .filter((d) => d.startsWith("console/src/tabs/"))
      .map((d) => `${f} -> ${d}`),
  );
  expect(crossing).toEqual([]);
  for (const f of tabs) {
    const exported = readFileSync(join(root, f), "utf8").match(/^export function \w+Tab\b/gm);
    expect({ f, tabs: exported?.length }).toEqual({ f, tabs: 1 });
  }
});

it("has no import cycle in the console, nor in src/ outside the store's contract", () => {
  // The reader sees what it must: a type-only import, and a cycle of two.
  expect(importsOf("src/validation/advisory-rules.ts")).toContain("src/store/advisory-store.ts");
  expect(
    cycles(
      new Map([
        ["a", ["b"]],
        ["b", ["a"]],
      ]),
    ),
  ).toEqual([["a", "b", "a"]]);
  expect(cycles(graphOf(sources("console/src")))).toEqual([]);
  // src/store/ has its own (store.ts and the per-resource contracts it aggregates import each
  // other), the store's part of issue 25 item 4. A cycle leaving it is counted.
  const outside = cycles(graphOf(sources("src"))).filter(
    (c) => !c.every((f) => f.startsWith("src/store/")),
  );
  expect(outside).toEqual([]);
});

it("keeps the store and the grant rule below auth/ and services/, and the call's provenance out of ambient state", () => {
  // The store learns who made a change from the view it is called through (Store.recording),
  // never from ambient state; the
  // grant rule, which both auth/ (a provider's default role) and services/ apply, imports
  // neither. The events modules it may read are plain data and functions of records.
  const below = [...sources("src/store"), ...sources("src/grants")];
  expect(below).toContain("src/grants/grant-rule.ts");
  const upward =
    /^src\/(auth|services|grpc|rest|pipeline|cli)\/|^src\/server\.ts$|^src\/events\/(?!(audit-scope|binding-summary|change-data|event-id|legacy-types)\.ts$)/;
  const reaching = [...below, ...sources("src/auth")].flatMap((f) =>
    importsOf(f)
      .filter((d) => (f.startsWith("src/auth/") ? /^src\/services\//.test(d) : upward.test(d)))
      .map((d) => `${f} -> ${d}`),
  );
  expect(reaching).toEqual([]);
  const holdsAmbient = (f: string) => /AsyncLocalStorage/.test(readFileSync(join(root, f), "utf8"));
  const ambient = below.flatMap((f) =>
    [f, ...importsOf(f)].filter(holdsAmbient).map((d) => `${f} -> ${d}`),
  );
  expect(ambient).toEqual([]);
  // Nor does any layer above it hold the call's provenance ambient: the audit interceptor
  // hands the call's scope and view to its handler with the call (src/call-store.ts).
  expect(sources("src").filter(holdsAmbient)).toEqual([]);
});
