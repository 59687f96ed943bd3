/**
 * Two V8 .cpuprofiles of the same load (bench/write-profile.ts, one a build) compared per
 * call: each profile's last `seconds` (the measured calls; the profile ends when the load
 * does) is read, each function's self time divided by the calls, and the functions (or, with
 * `--by=file`, the packages and source files) listed by how much more the second spends a call.
 * `--tree=<name>` prints, for each side, the inclusive time per call of the callees under every
 * frame named `<name>` (DEPTH=3 deep), to see where a function's time goes; `--callers=<name>`
 * the self time per call of the frames named `<name>` by their callers' chain (DEPTH deep);
 * `--inclusive=<name>,<name>` the inclusive time per call of each named function (a frame
 * inside another of the same name counted once), side by side.
 *
 *   node dist/bench/profile-compare.js <a.cpuprofile> <a calls> <b.cpuprofile> <b calls>
 *     [--seconds=8] [--top=40] [--by=file] [--tree=<function>]
 */
import { frameLabel, type ProfileNode, readProfile, where } from "./cpu-profile.js";

const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const opt = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const [fileA, callsA, fileB, callsB] = positional;
if (!fileA || !callsA || !fileB || !callsB) {
  console.error("usage: profile-compare <a.cpuprofile> <a calls> <b.cpuprofile> <b calls>");
  process.exit(2);
}
const seconds = Number(opt("seconds") ?? 8);
const top = Number(opt("top") ?? 40);
const byFile = opt("by") === "file";
const tree = opt("tree");
const callersOf = opt("callers");
const inclusiveOf = opt("inclusive")?.split(",");
const depth = Number(process.env.DEPTH ?? 3);

const label = (n: ProfileNode) =>
  byFile ? (n.callFrame.url ? where(n.callFrame.url) : n.callFrame.functionName) : frameLabel(n);

interface Read {
  /** Self microseconds per call by label. */
  self: Map<string, number>;
  /** Self microseconds per call by node id, for the trees. */
  nodeSelf: Map<number, number>;
  nodes: Map<number, ProfileNode>;
  total: number;
}

function read(file: string, calls: number): Read {
  const p = readProfile(file);
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  // The samples' times from the end backwards: keep the last `seconds`.
  let t = 0;
  const times = p.timeDeltas.map((d) => (t += d));
  const from = t - seconds * 1e6;
  const nodeSelf = new Map<number, number>();
  p.samples.forEach((id, i) => {
    if (times[i]! < from) return;
    const n = nodes.get(id)!;
    if (n.callFrame.functionName === "(idle)") return;
    nodeSelf.set(id, (nodeSelf.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / calls);
  });
  const self = new Map<string, number>();
  let total = 0;
  for (const [id, us] of nodeSelf) {
    const l = label(nodes.get(id)!);
    self.set(l, (self.get(l) ?? 0) + us);
    total += us;
  }
  return { self, nodeSelf, nodes, total };
}

const a = read(fileA, Number(callsA));
const b = read(fileB, Number(callsB));
console.log(`busy us/call: a ${a.total.toFixed(0)}, b ${b.total.toFixed(0)} (${seconds} s)\n`);

if (inclusiveOf) {
  const inclusive = (r: Read, name: string): number => {
    let sum = 0;
    const walk = (id: number, inside: boolean): number => {
      const n = r.nodes.get(id)!;
      const hit = !inside && (n.callFrame.functionName === name || frameLabel(n) === name);
      let t = r.nodeSelf.get(id) ?? 0;
      for (const c of n.children ?? []) t += walk(c, inside || hit);
      if (hit) sum += t;
      return t;
    };
    walk([...r.nodes.values()][0]!.id, false);
    return sum;
  };
  console.log("   a us    b us   b-a   (inclusive time per call)");
  for (const name of inclusiveOf) {
    const x = inclusive(a, name);
    const y = inclusive(b, name);
    console.log(
      `${x.toFixed(1).padStart(7)} ${y.toFixed(1).padStart(7)} ${(y - x).toFixed(1).padStart(6)}   ${name}`,
    );
  }
  process.exit(0);
}

if (callersOf) {
  for (const [side, r] of [
    ["a", a],
    ["b", b],
  ] as const) {
    const parentOf = new Map<number, number>();
    for (const n of r.nodes.values()) for (const c of n.children ?? []) parentOf.set(c, n.id);
    const chains = new Map<string, number>();
    for (const [id, us] of r.nodeSelf) {
      const n = r.nodes.get(id)!;
      if (n.callFrame.functionName !== callersOf) continue;
      const chain: string[] = [];
      let p = parentOf.get(id);
      while (p !== undefined && chain.length < depth) {
        chain.push(frameLabel(r.nodes.get(p)!));
        p = parentOf.get(p);
      }
      const key = chain.join(" < ");
      chains.set(key, (chains.get(key) ?? 0) + us);
    }
    console.log(`== ${side}: ${callersOf} by caller`);
    for (const [k, us] of [...chains].sort((x, y) => y[1] - x[1]).slice(0, top)) {
      console.log(`${us.toFixed(1).padStart(7)}  ${k}`);
    }
  }
  process.exit(0);
}

if (tree) {
  for (const [side, r] of [
    ["a", a],
    ["b", b],
  ] as const) {
    const inclusive = (id: number): number => {
      const n = r.nodes.get(id)!;
      return (r.nodeSelf.get(id) ?? 0) + (n.children ?? []).reduce((s, c) => s + inclusive(c), 0);
    };
    // Merge the callees of every frame with this name, by label, to `depth`.
    const merged = new Map<string, number>();
    const walk = (id: number, level: number, prefix: string) => {
      const n = r.nodes.get(id)!;
      const key = `${prefix}${frameLabel(n)}`;
      merged.set(key, (merged.get(key) ?? 0) + inclusive(id));
      if (level < depth) for (const c of n.children ?? []) walk(c, level + 1, `${key}\n  `);
    };
    const roots: number[] = [];
    const find = (id: number, inside: boolean) => {
      const n = r.nodes.get(id)!;
      const hit = n.callFrame.functionName === tree;
      if (hit && !inside) roots.push(id);
      for (const c of n.children ?? []) find(c, inside || hit);
    };
    const root = [...r.nodes.values()][0]!;
    find(root.id, false);
    for (const id of roots) walk(id, 0, "");
    console.log(`== ${side}: under ${tree}`);
    for (const [k, us] of [...merged].sort((x, y) => (x[0] < y[0] ? -1 : 1))) {
      if (us < 0.5) continue;
      const lines = k.split("\n");
      console.log(`${us.toFixed(1).padStart(7)}  ${lines[lines.length - 1]}`);
    }
  }
  process.exit(0);
}

const labels = new Set([...a.self.keys(), ...b.self.keys()]);
const rows = [...labels].map((l) => ({
  l,
  a: a.self.get(l) ?? 0,
  b: b.self.get(l) ?? 0,
}));
rows.sort((x, y) => y.b - y.a - (x.b - x.a));
console.log("   a us    b us   b-a   (self time per call; b's most over a first)");
const show = (r: (typeof rows)[number]) =>
  console.log(
    `${r.a.toFixed(1).padStart(7)} ${r.b.toFixed(1).padStart(7)} ${(r.b - r.a).toFixed(1).padStart(6)}   ${r.l}`,
  );
for (const r of rows.slice(0, top)) show(r);
console.log("...  (b's most under a)");
for (const r of rows.slice(-Math.ceil(top / 4))) show(r);
