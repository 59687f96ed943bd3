/**
 * Summarize a V8 .cpuprofile (from `npm run bench -- --profile`): self time by function and by
 * package or source file, and inclusive time of the functions named on the command line.
 * `node dist/bench/profile-summary.js <file.cpuprofile> [top=25] [fn ...]`; a `fn` written as
 * `tree:<name>` prints the call tree under that function instead (callees over 0.3%, DEPTH=4 deep).
 */
import { frameLabel, readProfile, where } from "./cpu-profile.js";

const [file, topArg, ...inclusiveOf] = process.argv.slice(2);
if (!file) {
  console.error("usage: profile-summary <file.cpuprofile> [top] [function ...]");
  process.exit(2);
}
const top = Number(topArg ?? 25);
const maxDepth = Number(process.env.DEPTH ?? 4);
const profile = readProfile(file);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// FROM_MS=<ms>: leave out the samples of the profile's first ms (start-up, seeding), so that
// the figures are those of the load alone (bench/profile-path.ts prints the figure).
const fromUs = Number(process.env.FROM_MS ?? 0) * 1000;
const busyOnly = process.env.BUSY === "1";
const selfTime = new Map<number, number>();
let total = 0;
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  if (at < fromUs) return;
  selfTime.set(id, (selfTime.get(id) ?? 0) + dt);
  // BUSY=1: percentages of the time the process was not idle (a load generator that cannot
  // keep the server busy leaves idle samples that would dilute every figure).
  if (!busyOnly || byId.get(id)!.callFrame.functionName !== "(idle)") total += dt;
});

const fnSelf = new Map<string, number>();
const pkgSelf = new Map<string, number>();
for (const [id, t] of selfTime) {
  const n = byId.get(id)!;
  fnSelf.set(frameLabel(n), (fnSelf.get(frameLabel(n)) ?? 0) + t);
  const pkg = n.callFrame.url ? where(n.callFrame.url) : n.callFrame.functionName;
  pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + t);
}

const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${pct(t)}  ${k}`);
  }
};
console.log(
  `total ${(total / 1000).toFixed(0)} ms sampled${busyOnly ? " (busy: idle left out)" : ""}`,
);
print("self time by function", fnSelf);
print("self time by package or file", pkgSelf);

// Inclusive time of every node: its own samples and those of its callees.
const inclusive = new Map<number, number>();
const inclusiveOfNode = (id: number): number => {
  const known = inclusive.get(id);
  if (known !== undefined) return known;
  const n = byId.get(id)!;
  let t = selfTime.get(id) ?? 0;
  for (const c of n.children ?? []) t += inclusiveOfNode(c);
  inclusive.set(id, t);
  return t;
};

/** Merge the subtrees under every node named `name` (outermost ones only) and print them. */
function printTree(name: string): void {
  interface Merged {
    t: number;
    kids: Map<string, Merged>;
  }
  const root: Merged = { t: 0, kids: new Map() };
  const add = (into: Merged, id: number, depth: number) => {
    into.t += inclusiveOfNode(id);
    if (depth === maxDepth) return;
    for (const c of byId.get(id)!.children ?? []) {
      const key = frameLabel(byId.get(c)!);
      const k = into.kids.get(key) ?? { t: 0, kids: new Map() };
      into.kids.set(key, k);
      add(k, c, depth + 1);
    }
  };
  const visit = (id: number, inside: boolean) => {
    const n = byId.get(id)!;
    const match = !inside && n.callFrame.functionName === name;
    if (match) add(root, id, 0);
    for (const c of n.children ?? []) visit(c, inside || match);
  };
  visit(profile.nodes[0]!.id, false);
  console.log(`\ntree ${pct(root.t)}  ${name}`);
  const show = (m: Merged, indent: string) => {
    for (const [k, v] of [...m.kids].sort((a, b) => b[1].t - a[1].t)) {
      if (v.t / total < 0.003) continue;
      console.log(`${pct(v.t)}  ${indent}${k}`);
      show(v, `${indent}  `);
    }
  };
  show(root, "  ");
}

// Inclusive time: a sample counts once for a function if the function is anywhere on its stack.
for (const name of inclusiveOf) {
  if (name.startsWith("tree:")) {
    printTree(name.slice("tree:".length));
    continue;
  }
  let t = 0;
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs) return;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      if (byId.get(cur)!.callFrame.functionName === name) {
        t += profile.timeDeltas[i] ?? 0;
        break;
      }
    }
  });
  console.log(`inclusive ${pct(t)}  ${name}`);
}
