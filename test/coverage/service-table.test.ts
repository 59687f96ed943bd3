import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { policy, policyOf } from "../../src/auth/policy.js";
import { remoteGroups } from "../../src/cli/remote/resource-commands.js";
import {
  apiServices,
  cliPlaces,
  isNot,
  protocolServices,
  type ServiceEntry,
  serviceEntries,
} from "../../src/service-table.js";

// One test that a served service is everywhere it must be: a new entry in the service table
// (src/service-table.ts) fails here until the cross-organization matrix has a row for each of
// its RPCs, the store suites exercise its store operations, the CLI and the console reach it,
// and docs/api.md lists it; or until its entry says why not ({ none: "..." }).

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");
const filesUnder = (dir: string, ext: RegExp) =>
  readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => ext.test(f))
    .map((f) => read(join(dir, f)));

/** The RPC names of the matrix's rows (`GetGroup`, `v1.GroupsService/Create`). */
const matrixRows = new Set(
  [...read("test/iam/cross-org-matrix.test.ts").matchAll(/\brpc: "([^" ]+)/g)].map((m) => m[1]),
);
/** What the store contract suites run, all files of test/store. */
const storeSuites = filesUnder("test/store", /\.ts$/).join("\n");
const consoleSource = filesUnder("console/src", /\.tsx?$/).join("\n");
const apiDoc = read("docs/api.md");

const entries = serviceEntries.map((e) => [e.name, e] as const);
const reasonOf = (v: unknown) => (isNot(v) ? v.none : undefined);

describe.each(entries)("%s", (_name, entry: ServiceEntry) => {
  const { service } = entry;

  it("has a rule for every RPC, and no rule for an RPC it does not have", () => {
    for (const m of service.methods)
      expect(policy, m.name).toHaveProperty([`${service.typeName}/${m.name}`]);
    expect(Object.keys(entry.rules).sort()).toEqual(service.methods.map((m) => m.name).sort());
  });

  it("has a row for every RPC in the cross-organization matrix", () => {
    if (entry.matrix !== true) return expect(reasonOf(entry.matrix)).toBeTruthy();
    // v2 rows are named by method (their names are unique across v2); v1 rows by service too.
    const row = (m: string) => (entry.adapter ? `v1.${service.name}/${m}` : m);
    const missing = service.methods.map((m) => row(m.name)).filter((r) => !matrixRows.has(r));
    expect(missing, "rows missing from test/iam/cross-org-matrix.test.ts").toEqual([]);
  });

  it("has every store operation it uses exercised by the store suites", () => {
    if (isNot(entry.store)) return expect(entry.store.none).toBeTruthy();
    expect(entry.store.length, "an entry with no store operations says why not").toBeGreaterThan(0);
    const missing = entry.store.filter((op) => !storeSuites.includes(`.${op}(`));
    expect(missing, "store operations no test/store suite calls").toEqual([]);
  });

  it("is reachable from the CLI, every RPC of it", () => {
    if (isNot(entry.cli)) return expect(entry.cli.none).toBeTruthy();
    const reached = new Set<string>();
    for (const place of cliPlaces(entry)) {
      const group = remoteGroups[place.group];
      expect(group, `CLI group ${place.group}`).toBeDefined();
      for (const a of group?.actions ?? [])
        if (a.method.parent === service) reached.add(a.method.name);
      for (const r of group?.resources.filter((r) => r.service === service) ?? []) {
        for (const m of service.methods) {
          const verb = /^(List|Export|Get|Create|Update|Delete|Redeem|Approve|Deny)(\w+)$/.exec(
            m.name,
          );
          const noun = verb?.[1] === "List" || verb?.[1] === "Export" ? r.plural : r.noun;
          if (verb && verb[2] === noun) reached.add(m.name);
        }
      }
    }
    const missing = service.methods.map((m) => m.name).filter((m) => !reached.has(m));
    expect(missing, "RPCs with no CLI command").toEqual([]);
  });

  it("is in the console's client map, and a console page uses it", () => {
    if (isNot(entry.console)) return expect(entry.console.none).toBeTruthy();
    const used = new RegExp(`\\bapi\\.${entry.console}\\s*\\.`).test(consoleSource);
    expect(used, `no console/src file calls api.${entry.console}`).toBe(true);
  });

  it("is listed in docs/api.md", () => {
    const row = `| \`${service.typeName}\` |`;
    expect(apiDoc.includes(row), `docs/api.md has no row ${row}`).toBe(true);
  });
});

describe("the service table", () => {
  it("names each service once, and each console key and CLI command once", () => {
    const names = apiServices.map((s) => s.typeName);
    expect(new Set(names).size).toBe(names.length);
    const keys = serviceEntries.flatMap((e) => (isNot(e.console) ? [] : [e.console]));
    expect(new Set(keys).size).toBe(keys.length);
    const commands = serviceEntries.flatMap((e) =>
      cliPlaces(e).flatMap((p) => ("command" in p ? [`${p.group} ${p.command}`] : [])),
    );
    expect(new Set(commands).size).toBe(commands.length);
  });

  it("is what docs/api.md lists, and nothing more", () => {
    const documented = [...apiDoc.matchAll(/^\| `((?:gatehouse)\.[\w.]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(apiServices.map((s) => s.typeName).sort());
  });

  it("has every store operation the handlers call exercised by the store suites", () => {
    const called = new Set(
      filesUnder("src/services", /\.ts$/).flatMap((src) =>
        [...src.matchAll(/\b(?:store|tx)\.(\w+)\(/g)].map((m) => m[1] as string),
      ),
    );
    expect([...called].filter((op) => !storeSuites.includes(`.${op}(`))).toEqual([]);
  });

  it("registers every console tab module in the group page's one list of tabs", () => {
    // A tab written but not listed would pass the console-reach test above and never show.
    const page = read("console/src/group-page.tsx");
    const listed = new Set([...page.matchAll(/\bView: (\w+)\b/g)].map((m) => m[1]));
    const tabModules = filesUnder("console/src/tabs", /\.tsx$/).flatMap((src) =>
      [...src.matchAll(/^export function (\w+Tab)\(/gm)].map((m) => m[1]),
    );
    expect(tabModules.length).toBeGreaterThan(0);
    expect(tabModules.filter((t) => !listed.has(t))).toEqual([]);
  });

  it("refuses a rule for a method its service does not have (a renamed RPC)", () => {
    const [health] = protocolServices;
    expect(() =>
      policyOf([{ service: health.service, rules: { Chek: { kind: "public" } } }]),
    ).toThrow(/grpc\.health\.v1\.Health\/Chek names no method/);
  });
});
