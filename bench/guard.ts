/**
 * `npm run bench:guard [-- --ref=<ref>] [--threshold=1.25] [--rounds=4] [--seconds=1.2]
 * [--only=rest,getgroup] [--before=<built checkout>] [--lend-harness] [--json=<file>]`: the
 * server's own CPU time per call of this checkout against another commit's, in the same run.
 *
 * The other commit (default HEAD~1) is checked out in a `git worktree` under a temporary
 * directory, with this checkout's node_modules linked in, and built there. Each side runs
 * its own bench/guard-server.ts (its own code seeds its own small dataset) with the Node flags
 * and environment it ships with (src/node-flags.ts), pinned to core 0
 * (taskset, where present) while the load runs here on core 1. For each path (REST, Connect
 * and gRPC GetGroup, ListGroups and CreateGroup, and the STS exchange) the two sides take
 * turns in short rounds, the first side alternating, so that a shared machine's drift falls
 * on both; a round's figure is the server's CPU microseconds (/proc/<pid>/stat) over the
 * calls it answered. Prints each path's after/before ratio as the median of the rounds
 * [min..max], and exits 1 when a path's median is above the threshold and every one of its
 * rounds was slower (at load 15 on 2 cores, one round in four strayed 1.3-1.6x either way).
 *
 * A commit without bench/guard-server.ts, one that does not build, or one
 * whose guard server does not start, is reported and skipped with exit 0 (CI's first run
 * after the guard, a broken previous commit);
 * `--lend-harness` copies this checkout's guard-server.ts (and guard-dataset.ts) into such a commit instead, for
 * comparing with an older one by hand. `--before=<dir>` uses a checkout already built.
 * `--json=<file>` also writes the outcome as vitest's JSON reporter does (one test a path),
 * for .ci/run's count.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { Agent } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { startOidcIssuer } from "../test/helpers/oidc-issuer.js";
import { groupsServiceClient } from "./groups-proto.js";
import { type GuardServed as Served, startGuardServer } from "./guard-process.js";
import { httpSender } from "./http-sender.js";
import { pinToCore1, processCpuMs, stop } from "./processes.js";
import { closedLoop } from "./setting-ab.js";

const hasTaskset = pinToCore1();

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ref = arg("ref") ?? "HEAD~1";
const threshold = Number(arg("threshold") ?? 1.25);
const rounds = Number(arg("rounds") ?? 4);
const seconds = Number(arg("seconds") ?? 1.2);
const only = arg("only")?.toLowerCase().split(",");
const jsonOut = arg("json");
const lend = process.argv.includes("--lend-harness");
if (!(threshold > 1) || !(rounds >= 1) || !(seconds > 0)) {
  console.error("bench:guard: --threshold must be above 1, --rounds at least 1, --seconds above 0");
  process.exit(2);
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const git = (...a: string[]) => execFileSync("git", a, { encoding: "utf8" }).trim();

/** The outcome for .ci/run: vitest's JSON reporter's fields that its count reads. */
function writeJson(results: { name: string; ok: boolean; message: string }[]): void {
  if (!jsonOut) return;
  const failed = results.filter((r) => !r.ok).length;
  writeFileSync(
    jsonOut,
    JSON.stringify({
      numPassedTests: results.length - failed,
      numFailedTests: failed,
      testResults: [
        {
          name: resolve("bench/guard.ts"),
          status: failed ? "failed" : "passed",
          message: "",
          assertionResults: results.map((r) => ({
            fullName: `bench:guard ${r.name}`,
            status: r.ok ? "passed" : "failed",
            failureMessages: r.ok ? [] : [r.message],
          })),
        },
      ],
    }),
  );
}

const tmp = mkdtempSync(join(tmpdir(), "gatehouse-guard-"));
let worktree: string | undefined;
const cleanUp = () => {
  if (worktree) {
    try {
      git("worktree", "remove", "--force", worktree);
    } catch {
      // Removed with the directory below; prune forgets it.
    }
    try {
      git("worktree", "prune");
    } catch {}
  }
  rmSync(tmp, { recursive: true, force: true });
};

/** Why the guard compares nothing: said once, exit 0. */
function skip(why: string): never {
  console.log(`bench:guard: skipped: ${why}`);
  writeJson([]);
  cleanUp();
  process.exit(0);
}

// --- the other side: checked out and built -----------------------------------------------------
let before = arg("before");
let label = before ?? ref;
if (!before) {
  let sha: string;
  try {
    sha = git("rev-parse", "--verify", "--quiet", `${ref}^{commit}`);
  } catch {
    skip(`${ref} names no commit here`);
  }
  label = `${ref} (${sha.slice(0, 7)})`;
  worktree = join(tmp, "before");
  git("worktree", "add", "--detach", "--quiet", worktree, sha);
  symlinkSync(realpathSync("node_modules"), join(worktree, "node_modules"));
  if (!existsSync(join(worktree, "bench/guard-server.ts"))) {
    if (!lend) skip(`${label} has no bench/guard-server.ts: it predates the guard`);
    // The server and the dataset module it imports.
    for (const file of ["bench/guard-server.ts", "bench/guard-dataset.ts"]) {
      copyFileSync(file, join(worktree, file));
    }
  }
  console.log(`bench:guard: building ${label} in ${worktree}`);
  try {
    execFileSync("npm", ["run", "build"], { cwd: worktree, stdio: "pipe" });
  } catch (err) {
    const out =
      String((err as { stdout?: Buffer }).stdout ?? "") +
      String((err as { stderr?: Buffer }).stderr ?? "");
    console.log(out.trim().split("\n").slice(-15).join("\n"));
    skip(`${label} does not build`);
  }
  before = worktree;
}

// --- the servers ------------------------------------------------------------------------------
interface Side {
  name: "before" | "after";
  proc: ChildProcess;
  served: Served;
}

const issuer = await startOidcIssuer();
const oidcToken = await issuer.issue();

async function startSide(name: Side["name"], checkout: string): Promise<Side> {
  // Each side with the Node flags and environment it ships with (src/node-flags.ts).
  const db = join(tmp, `${name}.db`);
  const started = await startGuardServer({
    checkout,
    db,
    issuerUrl: issuer.url,
    pin: hasTaskset,
    name,
  });
  return { name, ...started };
}

// --- the paths ----------------------------------------------------------------------------------
type Run = (s: Served, ms: number) => Promise<number>;
interface Path {
  name: string;
  run: Run;
}
let made = 0;
const uniqueName = () => `guard-${process.pid}-${made++}`;

// HTTP/1.1 over kept-alive connections, as autocannon's are, but counted exactly: autocannon
// ends a run only on its one-second tick, and counts by those ticks. An agent per run: a
// connection left idle while the other side runs may be closed by the server as it is reused.
const http =
  (
    method: "GET" | "POST",
    path: (s: Served) => string,
    body?: (s: Served) => string,
    headers: (s: Served) => Record<string, string> = (s) => ({
      authorization: `Bearer ${s.token}`,
    }),
  ): Run =>
  async (s, ms) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const done = await closedLoop(
      50,
      performance.now() + ms,
      httpSender(agent, `http://127.0.0.1:${s.port}${path(s)}`, {
        method,
        headers: { ...headers(s), ...(body ? { "content-type": "application/json" } : {}) },
        ...(body ? { body: () => body(s) } : {}),
      }),
    );
    agent.destroy();
    return done;
  };

type Unary = (req: unknown, md: grpc.Metadata, cb: (err: grpc.ServiceError | null) => void) => void;
const GroupsClient = groupsServiceClient();
/** 50 calls in flight on one grpc-js channel for `ms`; the number answered. */
const grpcRun =
  (method: "getGroup" | "listGroups" | "createGroup", request: (s: Served) => unknown): Run =>
  async (s, ms) => {
    const client = new GroupsClient(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${s.token}`);
    const call = (client as unknown as Record<string, Unary>)[method]!.bind(client);
    const done = await closedLoop(
      50,
      performance.now() + ms,
      () =>
        new Promise<void>((ok, fail) => call(request(s), md, (err) => (err ? fail(err) : ok()))),
    );
    client.close();
    return done;
  };

const rpc = (m: string) => `/gatehouse.iam.v2beta1.GroupsService/${m}`;
const listQuery = (s: Served) =>
  `?${new URLSearchParams({ "uidp.descendantsOf": s.org, pageSize: "20" })}`;
const allPaths: Path[] = [
  { name: "REST GetGroup", run: http("GET", (s) => `/iam/v2beta1/groups/${s.leaf}`) },
  {
    name: "Connect GetGroup",
    run: http(
      "POST",
      () => rpc("GetGroup"),
      (s) => JSON.stringify({ uid: s.leaf }),
    ),
  },
  { name: "gRPC GetGroup", run: grpcRun("getGroup", (s) => ({ uid: s.leaf })) },
  { name: "REST ListGroups", run: http("GET", (s) => `/iam/v2beta1/groups${listQuery(s)}`) },
  {
    name: "Connect ListGroups",
    run: http(
      "POST",
      () => rpc("ListGroups"),
      (s) => JSON.stringify({ uidp: { descendantsOf: s.org }, pageSize: 20 }),
    ),
  },
  {
    name: "gRPC ListGroups",
    run: grpcRun("listGroups", (s) => ({ uidp: { descendantsOf: s.org }, pageSize: 20 })),
  },
  {
    name: "REST CreateGroup",
    run: http(
      "POST",
      (s) => `/iam/v2beta1/groups/${s.parent}`,
      () => JSON.stringify({ name: uniqueName() }),
    ),
  },
  {
    name: "Connect CreateGroup",
    run: http(
      "POST",
      () => rpc("CreateGroup"),
      (s) => JSON.stringify({ parent: s.parent, group: { name: uniqueName() } }),
    ),
  },
  {
    name: "gRPC CreateGroup",
    run: grpcRun("createGroup", (s) => ({ parent: s.parent, group: { name: uniqueName() } })),
  },
  {
    name: "REST STS exchange",
    run: http(
      "POST",
      () => "/sts/exchange",
      (s) => JSON.stringify({ aud: s.baseUrl, identity: s.identity }),
      () => ({ authorization: `Bearer ${oidcToken}` }),
    ),
  },
];
const paths = allPaths.filter(
  (p) => !only || only.some((w) => p.name.toLowerCase().replace(/ /g, "").includes(w)),
);

// --- the rounds ---------------------------------------------------------------------------------
console.log(
  `bench:guard: ${label} (before) against this checkout (after); ${paths.length} paths, ${rounds} rounds of ${seconds} s a side; threshold ${threshold}x; load average ${load()}`,
);
const sides: Side[] = [];
const results: { name: string; ok: boolean; message: string }[] = [];
let slower = 0;
try {
  sides.push(await startSide("before", before));
} catch (err) {
  await issuer.stop();
  skip(`${label}'s guard server did not start (${(err as Error).message})`);
}
try {
  sides.push(await startSide("after", resolve(".")));
  // A first pass, not measured: each side's JIT compiles every path before the rounds.
  for (const path of paths) for (const side of sides) await path.run(side.served, 1000);
  const us = new Map<string, number[]>();
  const started = performance.now();
  for (let round = 0; round < rounds; round++) {
    for (const path of paths) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      const figure: Record<string, number> = {};
      for (const side of order) {
        const pid = side.proc.pid!;
        await path.run(side.served, 300); // warm-up
        const cpu0 = processCpuMs(pid);
        const calls = await path.run(side.served, seconds * 1000);
        const perCall = ((processCpuMs(pid) - cpu0) * 1000) / calls;
        figure[side.name] = perCall;
        const key = `${path.name}|${side.name}`;
        us.set(key, [...(us.get(key) ?? []), perCall]);
      }
      console.log(
        `  round ${round + 1} ${path.name}: before ${figure.before!.toFixed(0)} us/call, after ${figure.after!.toFixed(0)} us/call (${(figure.after! / figure.before!).toFixed(2)})`,
      );
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  };
  console.log(
    `\nserver CPU per call, median of ${rounds} rounds; after/before per round: median [min..max]; load average ${load()}; ${Math.round((performance.now() - started) / 1000)} s\n`,
  );
  console.log("| path | before us/call | after us/call | after/before | verdict |");
  console.log("|---|---|---|---|---|");
  for (const path of paths) {
    const b = us.get(`${path.name}|before`)!;
    const a = us.get(`${path.name}|after`)!;
    const ratios = a.map((x, i) => x / b[i]!);
    const r = median(ratios);
    // Slower: a median above the threshold, and every round slower. On a loaded shared
    // machine one round in four can land far off either way; a real loss shows in all.
    const ok = r <= threshold || Math.min(...ratios) <= 1;
    if (!ok) slower++;
    const spread = `${r.toFixed(2)} [${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)}]`;
    results.push({
      name: path.name,
      ok,
      message: `${path.name} takes ${r.toFixed(2)}x the server CPU per call of ${label} (rounds ${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)}), above the ${threshold}x threshold`,
    });
    console.log(
      `| ${path.name} | ${median(b).toFixed(0)} | ${median(a).toFixed(0)} | ${spread} | ${ok ? "ok" : `SLOWER (> ${threshold}x)`} |`,
    );
  }
} finally {
  for (const side of sides) await stop(side.proc);
  await issuer.stop();
  cleanUp();
}
writeJson(results);
console.log(
  slower === 0
    ? `\nbench:guard: no path above ${threshold}x of ${label}`
    : `\nbench:guard: ${slower} path(s) above ${threshold}x of ${label}`,
);
process.exit(slower === 0 ? 0 : 1);
