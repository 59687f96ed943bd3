/**
 * Hostile load (issue 24): a Gatehouse child on a fresh SQLite database with its production
 * limits, a control client calling GetGroup one call at a time over its own keep-alive
 * connection, and, one after the other, attacks from a second process, each bounded in count
 * and time and talking only to 127.0.0.1:
 * - a pipelined HTTP/1.1 flood: 50 connections pipelining 1,000 GETs of the largest console
 *   file each, again as each is closed;
 * - HTTP/1.1 clients that never read: 50 connections pipelining 64 GETs of it each;
 * - HTTP/2 clients that never read: 20 connections asking for it on 250 streams each;
 * - slowloris: 200 HTTP/2 connections sending a HEADERS frame a byte a second, and 200
 *   HTTP/1.1 connections sending their headers the same way.
 * - the red team's shapes (issue 36): 1,000 HTTP/1.1 non-readers and 200 HTTP/2 non-readers
 *   (100 streams each) from two addresses (127.0.0.1 and 127.0.0.2), and a console-file
 *   flood of 100 keep-alive clients reading every answer.
 * For each: the control client's p99 against its p99 with no attack in the same run (goal:
 * within 2x), the same p99 less the time the control's thread was runnable but waiting for
 * its core during each call (the attacker's core, on a 2-core machine: much of a loaded run's
 * tail, bench/RESULTS.md round 4), and the server's peak RSS during the
 * attack and its RSS 5 s after (ceiling 512 MB). Run: `npm run build && node_modules/node/bin/node dist/bench/hostile.js
 * [--seconds=15]` (the project's Node: on an older one bin/gatehouse.js runs the server in a
 * child of its own, and the RSS measured would be the wrapper's); prints a
 * Markdown table for bench/RESULTS.md ("Hostile load"); `--only=pipelined,slowloris` runs those. The server runs on core 0 (taskset),
 * the attacker and the control client on core 1, the attacker at nice 19 (`--attacker-nice`:
 * what an attacker on another machine takes of the control's core is nothing; before round 5
 * of bench/RESULTS.md it ran at nice 0). Beside each phase, what bounds the control:
 * the server's CPU time over the phase (share of its one core), its event loop's delay p99 and
 * max and its garbage collector's pauses (bench/loop-probe.ts, preloaded into it), and the
 * kernel's peak TCP buffer memory
 * (/proc/net/sockstat, every socket of the machine). `--profile=<dir>` runs the server under
 * `--cpu-prof` and leaves its .cpuprofile there (one profile for the whole run: profile one
 * attack at a time with `--only`; summarize it with dist/bench/profile-summary.js, and what the
 * server ran while the slowest control calls waited with dist/bench/profile-waits.js).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serverNodeFlags } from "../src/node-flags.js";
import { accepts, freePort, processCpuMs, stop } from "./processes.js";

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const seconds = Number(arg("seconds") ?? 15);
const profileDir = arg("profile");
/**
 * `--server-flags=--trace-gc`: Node flags for the server, after its own. Pinned to one core,
 * `gatehouse serve` restarts itself with src/node-flags.ts's oneCpuNodeFlags
 * (`--single-threaded-gc`); `--server-flags=--no-single-threaded-gc` measures it without.
 */
const serverFlags = arg("server-flags")?.split(",") ?? [];
/**
 * The control client's own loopback address (all of 127/8 is loopback): the server shares its
 * work fairly between client addresses (src/fair-starts.ts), and the attacks come from
 * 127.0.0.1 and 127.0.0.2. `--control-address=127.0.0.1` puts the control behind the
 * attacker's address, where it gets the attacker's share.
 */
const controlAddress = arg("control-address") ?? "127.0.0.3";
const ceilingMb = 512;
/**
 * The attacker process's niceness: 19 (the lowest priority) by default. The attacker shares
 * core 1 with the control client, and a flood that keeps that core busy made the control wait
 * for its own core 55-90% of its slowest calls' time (bench/RESULTS.md, round 4 and 5): the
 * bench's machine, not the server. An attacker on another machine takes nothing of the control
 * client's core; at nice 19 it takes what the control leaves (the kernel gives a nice-0 thread
 * that wakes up the core at once). The server's core and its share are as before.
 * `--attacker-nice=0` measures the old way.
 */
const attackerNice = Number(arg("attacker-nice") ?? 19);

/** The attacks, by name: each runs in the attacker process until `until` (Date.now()). */
const attacks: Record<string, (port: number, path: string, until: number) => Promise<void>> = {
  // The floods that read count the bytes they read (`read`): how much they were served.
  async pipelined(port, path, until) {
    const flood = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(1_000);
    const conn = async () => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const s = net.connect(port, "127.0.0.1", () => s.write(flood));
          s.on("data", (chunk: Buffer) => {
            read += chunk.length;
          });
          s.on("error", () => undefined);
          s.once("close", () => resolve());
          setTimeout(() => s.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all(Array.from({ length: 50 }, conn));
  },
  async unreadH1(port, path, until) {
    const ask = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(64);
    const conn = async () => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const s = net.connect(port, "127.0.0.1", () => {
            s.write(ask);
            s.pause();
          });
          s.on("error", () => undefined);
          s.once("close", () => resolve());
          // A reset is seen only when writing: an empty line (allowed between requests) a second.
          const probe = setInterval(() => {
            if (!s.destroyed) s.write("\r\n");
          }, 1_000);
          s.once("close", () => clearInterval(probe));
          setTimeout(() => s.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all(Array.from({ length: 50 }, conn));
  },
  async unreadH2(port, path, until) {
    const conn = async () => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const session = http2.connect(`http://127.0.0.1:${port}`);
          session.on("error", () => undefined);
          session.once("close", () => resolve());
          session.once("connect", () => {
            for (let i = 0; i < 250; i++) {
              const stream = session.request({ ":path": path });
              stream.on("error", () => undefined);
              stream.pause();
            }
          });
          setTimeout(() => session.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all(Array.from({ length: 20 }, conn));
  },
  async unreadH1Many(port, path, until) {
    // The red team's shape (issue 36 item 2): 1,000 connections from two addresses, each
    // pipelining 8 GETs of the page and reading nothing, reconnecting when dropped.
    const ask = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(8);
    const conn = async (localAddress: string) => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const s = net.connect({ port, host: "127.0.0.1", localAddress }, () => {
            s.write(ask);
            s.pause();
          });
          s.on("error", () => undefined);
          s.once("close", () => setTimeout(resolve, 100));
          const probe = setInterval(() => {
            if (!s.destroyed) s.write("\r\n");
          }, 1_000);
          s.once("close", () => clearInterval(probe));
          setTimeout(() => s.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => conn(i % 2 ? "127.0.0.2" : "127.0.0.1")),
    );
  },
  async unreadH2Many(port, path, until) {
    // 200 connections from two addresses, 100 streams each (the server's cap), none read.
    const conn = async (localAddress: string) => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const session = http2.connect(`http://127.0.0.1:${port}`, {
            createConnection: () => net.connect({ port, host: "127.0.0.1", localAddress }),
          });
          session.on("error", () => undefined);
          session.once("close", () => setTimeout(resolve, 100));
          session.once("connect", () => {
            for (let i = 0; i < 100; i++) {
              const stream = session.request({ ":path": path });
              stream.on("error", () => undefined);
              stream.pause();
            }
          });
          setTimeout(() => session.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => conn(i % 2 ? "127.0.0.2" : "127.0.0.1")),
    );
  },
  async staticFlood(port, path, until) {
    // A console-file flood: 100 keep-alive clients asking for the page back to back, reading
    // every answer (a browser would ask for it compressed; these do not).
    const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
    const one = () =>
      new Promise<void>((resolve) => {
        const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
          res.on("data", (chunk: Buffer) => {
            read += chunk.length;
          });
          res.once("end", () => resolve());
          res.once("error", () => resolve());
        });
        req.once("error", () => resolve());
      });
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (Date.now() < until) await one();
      }),
    );
    agent.destroy();
  },
  async slowloris(port, _path, until) {
    const h2 = Buffer.concat([
      Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
      Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
    ]);
    // A HEADERS frame of 4,000 bytes that will never be finished.
    const headers = Buffer.from([0, 0x0f, 0xa0, 1, 5, 0, 0, 0, 1, 0x82, 0x84, 0x86]);
    const h1Rest = Buffer.from("X-Pad: 1\r\n".repeat(400));
    const conn = async (first: Buffer, rest: Buffer) => {
      while (Date.now() < until) {
        await new Promise<void>((resolve) => {
          const s = net.connect(port, "127.0.0.1", () => s.write(first));
          s.on("data", () => undefined);
          s.on("error", () => undefined);
          let i = 0;
          const drip = setInterval(() => {
            if (!s.destroyed && i < rest.length) s.write(rest.subarray(i, ++i));
          }, 1_000);
          s.once("close", () => {
            clearInterval(drip);
            resolve();
          });
          setTimeout(() => s.destroy(), Math.max(0, until - Date.now())).unref();
        });
      }
    };
    await Promise.all([
      ...Array.from({ length: 200 }, () => conn(h2, headers)),
      ...Array.from({ length: 200 }, () => conn(Buffer.from("GET /healthz HTTP/1.1\r\n"), h1Rest)),
    ]);
  },
};

/** Bytes the attacking clients read (the floods that read). */
let read = 0;

const descriptions: Record<string, string> = {
  pipelined: "pipelined HTTP/1.1 flood: 50 connections x 1,000 GETs of the page, reconnecting",
  unreadH1: "HTTP/1.1 clients that never read: 50 connections x 64 pipelined GETs of the page",
  unreadH2: "HTTP/2 clients that never read: 20 connections x 250 streams of the page",
  slowloris: "slowloris: 200 HTTP/2 HEADERS frames and 200 HTTP/1.1 headers, a byte a second",
  unreadH1Many:
    "HTTP/1.1 clients that never read: 1,000 connections from two addresses x 8 pipelined GETs",
  unreadH2Many: "HTTP/2 clients that never read: 200 connections from two addresses x 100 streams",
  staticFlood: "console-file flood: 100 keep-alive clients GETting the page back to back",
};

const attackName = arg("attack");
if (attackName) {
  // The attacker process.
  const attack = attacks[attackName];
  if (!attack) throw new Error(`no attack ${attackName}`);
  await attack(Number(arg("port")), arg("path") ?? "/", Number(arg("until")));
  if (read > 0) console.log(`${attackName}: the attackers read ${(read / 1e6).toFixed(0)} MB`);
  process.exit(0);
}

const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
/**
 * The control client's core: 1, the attacker's, by default. `--control-core=0` puts it beside
 * the server instead, where a flood that saturates the attacker's core does not delay it.
 */
const controlCore = arg("control-core") ?? "1";
if (hasTaskset) execFileSync("taskset", ["-pc", controlCore, String(process.pid)]);
const onCore = (core: number, cmd: string[]): [string, string[]] =>
  hasTaskset ? ["taskset", ["-c", String(core), ...cmd]] : [cmd[0]!, cmd.slice(1)];

// The page the floods ask for: the largest file of the built console (the 83 KB of issue 24).
const consoleDir = "dist/console";
const page = readdirSync(consoleDir)
  .filter((f) => f !== "index.html")
  .map((f) => ({ f, size: statSync(join(consoleDir, f)).size }))
  .sort((a, b) => b.size - a.size)[0];
if (!page) throw new Error("the console is not built: npm run build");
/** `--page=/no-such-page` floods with a small answer (a 404): what the requests cost, not the bytes. */
const pagePath = arg("page") ?? `/console/${page.f}`;

const dir = mkdtempSync(join(tmpdir(), "gatehouse-hostile-"));
const port = await freePort();
const baseUrl = `http://127.0.0.1:${port}`;
const env = {
  ...process.env,
  GATEHOUSE_HOST: "127.0.0.1",
  GATEHOUSE_PORT: String(port),
  GATEHOUSE_BASE_URL: baseUrl,
  GATEHOUSE_DB: join(dir, "gatehouse.db"),
  GATEHOUSE_LOG_LEVEL: "warn",
  GATEHOUSE_BENCH_LOOP_FILE: join(dir, "loop.json"),
};
const boot = JSON.parse(
  execFileSync(process.execPath, ["bin/gatehouse.js", "bootstrap", "--org", "hostile"], {
    env,
    encoding: "utf8",
  }),
) as { orgUid: string; token: string };
const probe = fileURLToPath(new URL("./loop-probe.js", import.meta.url));
const [cmd, args] = onCore(0, [
  process.execPath,
  ...serverNodeFlags,
  ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
  ...serverFlags,
  "--import",
  probe,
  "bin/gatehouse.js",
  "serve",
]);
const server: ChildProcess = spawn(cmd, args, { env, stdio: "inherit" });
try {
  for (let i = 0; !(await accepts(port)); i++) {
    if (i > 600 || server.exitCode !== null) throw new Error("the server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  const rssMb = () => {
    const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  };

  /** The server's event-loop delay since the last call (bench/loop-probe.ts), in ms. */
  const loopDelay = async () => {
    const file = env.GATEHOUSE_BENCH_LOOP_FILE;
    if (existsSync(file)) unlinkSync(file);
    server.kill("SIGUSR2");
    for (let i = 0; i < 200 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
    const none = { count: 0, ms: Number.NaN, max: Number.NaN };
    if (!existsSync(file)) return { p50: Number.NaN, p99: Number.NaN, max: Number.NaN, gc: none };
    await new Promise((r) => setTimeout(r, 20)); // the write may be under way
    return JSON.parse(readFileSync(file, "utf8")) as {
      p50: number;
      p99: number;
      max: number;
      gc: { count: number; ms: number; max: number };
    };
  };
  /** The kernel's TCP buffer memory, in pages, for every socket of the machine. */
  const tcpMemPages = () =>
    Number(/TCP:.* mem (\d+)/.exec(readFileSync("/proc/net/sockstat", "utf8"))?.[1] ?? 0);
  /**
   * The server's main thread (the event loop): ns on a core, and ns runnable but waiting for
   * one (/proc/<pid>/schedstat); on a shared machine the second is other processes' doing.
   */
  const schedNs = () => {
    const [run, wait] = readFileSync(`/proc/${server.pid}/schedstat`, "utf8").split(" ");
    return { run: Number(run), wait: Number(wait) };
  };
  /** Run `phase` and measure what bounds it: server CPU, event-loop delay, kernel TCP memory. */
  const measured = async <T>(phase: () => Promise<T>) => {
    await loopDelay();
    let tcpPeak = tcpMemPages();
    const tcpSampler = setInterval(() => {
      tcpPeak = Math.max(tcpPeak, tcpMemPages());
    }, 200);
    const cpu0 = processCpuMs(server.pid!);
    const sched0 = schedNs();
    const t0 = performance.now();
    const result = await phase();
    const ms = performance.now() - t0;
    const cpuShare = (processCpuMs(server.pid!) - cpu0) / ms;
    const sched1 = schedNs();
    const mainRun = (sched1.run - sched0.run) / 1e6 / ms;
    const mainWait = (sched1.wait - sched0.wait) / 1e6 / ms;
    clearInterval(tcpSampler);
    const loop = await loopDelay();
    const pc = (x: number) => `${(100 * x).toFixed(0)}%`;
    const gc = `${loop.gc.count} pauses, ${loop.gc.ms.toFixed(0)} ms (${pc(loop.gc.ms / ms)}), longest ${loop.gc.max.toFixed(1)} ms`;
    const bounds = `${pc(cpuShare)} (loop ${pc(mainRun)} running, ${pc(mainWait)} waiting for the core) | ${loop.p99.toFixed(0)} / ${loop.max.toFixed(0)} ms | ${gc} | ${tcpPeak} pages`;
    return { result, bounds };
  };

  // The control client: GetGroup, one call at a time on one kept-alive connection.
  const controlAgent = () =>
    new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: controlAddress });
  let agent = controlAgent();
  /** Why control calls failed: a status or a socket error, and how many times. */
  const failures = new Map<string, number>();
  const failed = (why: string) => {
    failures.set(why, (failures.get(why) ?? 0) + 1);
    return Number.NaN;
  };
  const getGroup = () =>
    new Promise<number>((resolve) => {
      const started = performance.now();
      const req = http.get(
        `${baseUrl}/iam/v2beta1/groups/${boot.orgUid}`,
        { agent, headers: { authorization: `Bearer ${boot.token}` } },
        (res) => {
          res.resume();
          res.on("end", () =>
            resolve(
              res.statusCode === 200
                ? performance.now() - started
                : failed(`HTTP ${res.statusCode}`),
            ),
          );
        },
      );
      req.on("error", (e: NodeJS.ErrnoException) =>
        resolve(failed(`${e.code ?? e.message}${req.reusedSocket ? " (reused socket)" : ""}`)),
      );
      req.setTimeout(30_000, () => req.destroy());
    });
  /**
   * Every control call's start and end on the monotonic clock (us), by phase: with `--profile`
   * they are written beside the profile, whose sample times are on the same clock, so that
   * bench/profile-waits.ts can say what the server ran while the slowest calls waited.
   */
  const calls: { phase: string; from: number; to: number; clientWaitUs: number }[] = [];
  /** This process's main thread: ns runnable but waiting for its core (it shares the attacker's). */
  const ownWaitNs = () => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]);
  let phase = "none";
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  /** Control calls every 20 ms for `ms`: p50, p99 and the calls that failed. */
  const control = async (ms: number) => {
    const times: number[] = [];
    // The server's main-thread CPU time while each call waited: what it served before the
    // control, whatever share of the core the machine's load left it.
    const cpu: number[] = [];
    const unwaited: number[] = [];
    let failed = 0;
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const s0 = schedNs();
      const from = nowUs();
      const w0 = ownWaitNs();
      const t = await getGroup();
      if (Number.isNaN(t)) failed++;
      else {
        const clientWaitMs = (ownWaitNs() - w0) / 1e6;
        const s1 = schedNs();
        calls.push({ phase, from, to: nowUs(), clientWaitUs: clientWaitMs * 1000 });
        times.push(t);
        cpu.push((s1.run - s0.run) / 1e6);
        // Less the time the control's own thread was runnable and waiting for its core (shared
        // with the attacker's, or the machine's load): what the server's order of service and
        // its own core left of the call. (Not the server's wait: a saturated server would
        // spend that time on the flood, not on the control.)
        unwaited.push(Math.max(0, t - clientWaitMs));
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    times.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    unwaited.sort((a, b) => a - b);
    const q = (p: number, xs = times) =>
      xs[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)] ?? 0;
    return {
      p50: q(0.5),
      p99: q(0.99),
      cpu99: q(0.99, cpu),
      unwaited99: q(0.99, unwaited),
      n: times.length,
      failed,
    };
  };

  for (let i = 0; i < 100; i++) await getGroup(); // warm-up
  const { result: idle, bounds: idleBounds } = await measured(() => control(seconds * 1_000));
  const rows: string[] = [
    "| attack | control p50 / p99 | p99 vs unloaded | p99 less the control's own wait for its core (vs unloaded) | server CPU a control call, p99 (vs unloaded) | control calls failed | server RSS peak / 5 s after | ceiling | server CPU (of its core; main thread) | event-loop delay p99 / max | server GC pauses (share of the phase's wall time) | kernel TCP mem peak |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    `| none (unloaded control) | ${idle.p50.toFixed(2)} / ${idle.p99.toFixed(2)} ms | 1x | ${idle.unwaited99.toFixed(2)} ms (1x) | ${idle.cpu99.toFixed(2)} ms (1x) | ${idle.failed} of ${idle.n + idle.failed} | ${rssMb().toFixed(0)} MB | - | ${idleBounds} |`,
  ];
  console.log(
    `page ${pagePath}: ${page.size} bytes; control from ${controlAddress}; attacker at nice ${attackerNice}; unloaded control p99 ${idle.p99.toFixed(2)} ms; load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
  );
  const only = arg("only")?.split(",");
  for (const name of Object.keys(attacks).filter((a) => !only || only.includes(a))) {
    const until = Date.now() + seconds * 1_000;
    // Through nice(1), so that every thread of the attacker has its niceness (a process's own
    // setpriority sets only its calling thread's on Linux: its GC threads would keep theirs).
    const [acmd, aargs] = onCore(1, [
      "nice",
      "-n",
      String(attackerNice),
      process.execPath,
      fileURLToPath(import.meta.url),
      `--attack=${name}`,
      `--port=${port}`,
      `--path=${pagePath}`,
      `--until=${until}`,
    ]);
    const attacker = spawn(acmd, aargs, { stdio: "inherit" });
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb());
    }, 100);
    // Let the attack build up for a second, then measure the control beside it.
    await new Promise((r) => setTimeout(r, 1_000));
    phase = name;
    const { result: c, bounds } = await measured(() =>
      control(Math.max(1_000, until - Date.now())),
    );
    await new Promise<void>((resolve) => {
      if (attacker.exitCode !== null) resolve();
      else attacker.once("exit", () => resolve());
    });
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 5_000));
    const after = rssMb();
    // A new connection for the next phase: the server's 5 s keep-alive timeout may be closing
    // this one just as it is reused (a client-side race of keep-alive, not the attack's doing).
    agent.destroy();
    agent = controlAgent();
    const ratio = c.p99 / idle.p99;
    const met = (ok: boolean) => (ok ? "met" : "MISSED");
    rows.push(
      `| ${descriptions[name]} | ${c.p50.toFixed(2)} / ${c.p99.toFixed(2)} ms | ${ratio.toFixed(1)}x ${met(ratio <= 2)} | ${c.unwaited99.toFixed(2)} ms (${(c.unwaited99 / idle.unwaited99).toFixed(1)}x) | ${c.cpu99.toFixed(2)} ms (${(c.cpu99 / idle.cpu99).toFixed(1)}x) | ${c.failed} of ${c.n + c.failed} | ${peak.toFixed(0)} / ${after.toFixed(0)} MB | ${ceilingMb} MB ${met(peak <= ceilingMb)} | ${bounds} |`,
    );
    console.log(rows.at(-1));
  }
  agent.destroy();
  if (profileDir) writeFileSync(join(profileDir, "control-calls.json"), JSON.stringify(calls));
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`\n${rows.join("\n")}\nload average after: ${load}`);
  if (failures.size > 0) console.log(`control failures: ${JSON.stringify([...failures])}`);
} finally {
  await stop(server);
  rmSync(dir, { recursive: true, force: true });
}
