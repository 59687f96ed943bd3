import http from "node:http";
import { loadavg } from "node:os";
import { expect, it } from "vitest";
import { type Attacker, runAttacker, startAttacker } from "./helpers/attacker.js";
import { controlClientOf, quantile, useServedProcess } from "./helpers/control-client.js";

// Issue 36 item 3: HTTP/2 clients that never read, opening many connections of 100 streams
// from one address, do not take the event loop from a client at another address. A server
// process; 100 HTTP/2 connections from 127.0.0.1, in a process of their own, asking for a
// 150 kB file on 100 streams each and reading nothing, again as each is reset (after 1 s
// here); a control
// client from 127.0.0.2 asking for a small file one call at a time, alone and then beside
// them, in the same run. What is compared is the server's own CPU time while each control call
// waited (its main thread's, /proc/<pid>/schedstat): what it did before answering, whatever
// share of the core the machine's load left it. Before, Node built every stream of every
// connection read in one poll before the control's turn: the control's p99 was 100-190x its
// p99 alone (bench/RESULTS.md); past 4 connections of an address, a connection now may have 8
// streams at once, and nghttp2 refuses the others before Node builds anything.

const served = useServedProcess("hostile-fairness", {
  // Non-readers are reset after a second, and come back: a new burst of streams each time.
  GATEHOUSE_UNSENT_STALL_MS: "1000",
});
const { controlCall, controlCalls, serverCpuMs } = controlClientOf(served);

/**
 * The attack, run by a process of its own for `ms`: `sessions` HTTP/2 connections from
 * 127.0.0.1 opening `streams` streams each for `path` and reading none, a new one as each is
 * reset. Prints how many connections it opened when done.
 */
const attackScript = `
const http2 = require("node:http2");
const [port, path, sessions, streams, ms] = process.argv.slice(1).map((a, i) => (i === 1 ? a : Number(a)));
const until = Date.now() + ms;
let opened = 0;
const conn = async () => {
  while (Date.now() < until) {
    await new Promise((resolve) => {
      const session = http2.connect("http://127.0.0.1:" + port);
      opened++;
      session.on("error", () => undefined);
      session.once("close", () => setTimeout(resolve, 100));
      session.once("connect", () => {
        for (let i = 0; i < streams; i++) {
          const stream = session.request({ ":path": path });
          stream.on("error", () => undefined);
          stream.pause();
        }
      });
      setTimeout(() => session.destroy(), Math.max(0, until - Date.now())).unref();
    });
  }
};
Promise.all(Array.from({ length: sessions }, conn)).then(() => process.stdout.write(String(opened)));
`;

/** Run the attack; resolves with the number of connections it opened once it is over. */
async function attack(path: string, sessions: number, streams: number, ms: number) {
  const [opened] = await runAttacker(attackScript, [served.port, path, sessions, streams, ms]);
  return opened!;
}

it("serves a client from another address beside HTTP/2 non-readers as it is served alone", {
  timeout: 120_000,
}, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: "127.0.0.2" });
  try {
    for (let i = 0; i < 20; i++) await controlCall(agent, "/docs/docs.js"); // warm-up
    // The control's two windows, alone and beside the attack, which ends just after the second.
    const windowMs = 6_000;
    const alone = await controlCalls(agent, windowMs);
    const attackDone = attack("/docs/swagger-ui.css", 100, 100, windowMs + 500);
    const beside = await controlCalls(agent, windowMs);
    const opened = await attackDone;
    expect([...alone.wall, ...beside.wall].filter((t) => Number.isNaN(t))).toEqual([]);
    expect(opened).toBeGreaterThanOrEqual(100);
    const ms = (xs: number[]) =>
      `median ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms`;
    const ratio = quantile(beside.cpu, 0.99) / quantile(alone.cpu, 0.99);
    console.log(
      `control alone: ${alone.wall.length} calls, ${ms(alone.wall)}, server CPU a call ${ms(alone.cpu)}; ` +
        `beside the attack (${opened} connections): ${beside.wall.length} calls, ${ms(beside.wall)}, ` +
        `server CPU a call ${ms(beside.cpu)}; CPU p99 ratio ${ratio.toFixed(1)}; load ` +
        `${loadavg()[0]?.toFixed(1)}`,
    );
    // Goal 2x of wall time (bench/hostile.ts measures it: 10-27x of server CPU remain, the
    // connections' first reads); generous here. Before: 100x and more.
    expect(ratio).toBeLessThan(40);
  } finally {
    agent.destroy();
  }
});

// Issue 36 item 3, the red team's 1,000 HTTP/1.1 non-readers: the sweep resets the connections
// over the stalled budgets (48 MiB from one address) the largest first, hundreds at a time,
// and each reset costs Node its socket's close and every request and write it still held.
// Reset in one turn, hundreds of them held the event loop 50-120 ms (bench/RESULTS.md round
// 9), a control client's call waiting behind them; they are now reset 8 a turn. 1,000
// connections from 127.0.0.1 and 127.0.0.3, in a process of their own, each pipelining 32 GETs
// of a 1.4 MB file (the more requests a reset connection holds, the more a turn of resets
// costs: each says Content-Length: 0, so that all are parsed ahead, where bare GETs are parsed
// two ahead, src/read-ahead.ts) and reading nothing past its first answer's first bytes; once
// all have had those (their accepts and first requests, one burst, are not what is measured)
// the control from 127.0.0.2 calls while the sweep finds them stalled and resets them. The
// attacker prints "answered", then, when its time is up, how many were reset.
const h1NonReadersScript = `
const net = require("node:net");
const [port, path, connections, ms] = process.argv.slice(1).map((a, i) => (i === 1 ? a : Number(a)));
const ask = ("GET " + path + " HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 0\\r\\n\\r\\n").repeat(32);
let answered = 0;
let reset = 0;
const sockets = Array.from({ length: connections }, (_, i) => {
  const localAddress = i % 2 ? "127.0.0.3" : "127.0.0.1";
  const s = net.connect({ port, host: "127.0.0.1", localAddress }, () => s.write(ask));
  // The first bytes of its first answer, then nothing more read.
  s.once("data", () => {
    s.pause();
    if (++answered === connections) {
      process.stdout.write("answered\\n");
      setTimeout(() => {
        // A reset is seen only when writing: an empty line (allowed between requests).
        for (const t of sockets) t.destroyed || t.write("\\r\\n");
        setTimeout(() => {
          for (const t of sockets) t.destroy();
          process.stdout.write(String(reset));
        }, 500);
      }, ms);
    }
  });
  s.on("error", (e) => {
    if (e.code === "ECONNRESET" || e.code === "EPIPE") reset++;
  });
  return s;
});
`;

it("serves a client from another address while the sweep resets hundreds of HTTP/1.1 non-readers", {
  timeout: 120_000,
}, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: "127.0.0.2" });
  const connections = 1_000;
  const windowMs = 4_000;
  let attacker: Attacker | undefined;
  try {
    for (let i = 0; i < 20; i++) await controlCall(agent, "/docs/docs.js"); // warm-up
    const alone = await controlCalls(agent, windowMs);
    attacker = startAttacker(h1NonReadersScript, [
      served.port,
      "/docs/swagger-ui-bundle.js",
      connections,
      windowMs,
    ]);
    await attacker.printed(/answered\n/);
    const cpu0 = serverCpuMs();
    const beside = await controlCalls(agent, windowMs);
    const cpuBeside = serverCpuMs() - cpu0;
    const out = await attacker.printed(/answered\n\d+$/);
    const reset = Number(out.split("\n")[1]);
    const ms = (xs: number[]) =>
      `median ${quantile(xs, 0.5).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
    // What one reset cost the server, at most: its CPU in the window but for the control's
    // own calls (at their median alone), over the resets. It has the speed and load of this
    // run, as the longest call has.
    const perReset = (cpuBeside - beside.cpu.length * quantile(alone.cpu, 0.5)) / reset;
    const resetsWorth = Math.max(...beside.cpu) / perReset;
    const longest = [...beside.cpu]
      .sort((x, y) => y - x)
      .slice(0, 5)
      .map((x) => x.toFixed(1))
      .join(", ");
    console.log(
      `control alone: ${alone.wall.length} calls, ${ms(alone.wall)}, server CPU a call ${ms(alone.cpu)}; ` +
        `while ${reset} non-readers were reset: ${beside.wall.length} calls, ${ms(beside.wall)}, ` +
        `server CPU a call ${ms(beside.cpu)} (the five longest ${longest}); server CPU in the ` +
        `window ${cpuBeside.toFixed(0)} ms, ${perReset.toFixed(2)} ms a reset; the longest call ` +
        `waited as long as ${resetsWorth.toFixed(0)} resets; load ${loadavg()[0]?.toFixed(1)}`,
    );
    expect([...alone.wall, ...beside.wall].filter((t) => Number.isNaN(t))).toEqual([]);
    // The sweep found them stalled and reset them within the window: all of them on a quiet
    // machine or beside two CPU burners, 906 in one run of the whole suite (the server slower
    // to fill their buffers), 384 in one clean-clone CI run.
    expect(reset).toBeGreaterThanOrEqual(connections / 5);
    // The longest a control call waited on the server's work, in resets of this run. Reset 8 a
    // turn: 8-29 resets' worth in eight runs, three beside two CPU burners. All those a sweep
    // finds in one turn: 151-189 (73-87 ms in one call) in four runs, two beside the burners.
    // (Against a call's median alone, as it was, a CI run read 178x for one 19 ms call: its
    // calls' median was 0.1 ms, a unit too small for a clock that counts a busy thread's time
    // in 4 ms ticks.)
    expect(resetsWorth).toBeLessThan(75);
  } finally {
    attacker?.kill();
    agent.destroy();
  }
});
