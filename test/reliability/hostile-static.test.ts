import http from "node:http";
import { loadavg } from "node:os";
import { expect, it } from "vitest";
import { runAttacker } from "./helpers/attacker.js";
import { controlClientOf, quantile, useServedProcess } from "./helpers/control-client.js";

// Issue 36 item 3: a flood of requests for a large static file does not take the event loop
// from a client at another address. A server process; 100 keep-alive clients from 127.0.0.1,
// in a process of their own, asking for Swagger UI's script (1.7 MB, uncompressed: they send
// no Accept-Encoding) back to back and reading every answer; a control client from
// 127.0.0.2 asking for a small file one call at a time, alone and then beside them, in the
// same run. What is compared is the server's own CPU time while each control call waited (its
// main thread's, /proc/<pid>/schedstat), whatever share of the core the machine's load left
// it. Before, up to 16 such answers started in one turn of the event loop (27 MB handed to the
// kernel in one go) ahead of the control's; now an address's answers start a turn's worth of
// bytes at a time (src/fair-starts.ts), each written a 64 kB slice a turn (src/answer-slices.ts),
// the control's at once. Measured alternating with main (load 26-29): main 55.3x and 32.9x,
// after 4.6x and 11.3x, the flood served as much; with slices (load 9-10), main 5.1x and 3.5x,
// after 5.0x and 12.5x: at that load the ratio moves more between runs than between builds.

const served = useServedProcess("hostile-static");
const { controlCall, controlCalls } = controlClientOf(served);

/**
 * The flood, run by a process of its own for `ms`: `clients` keep-alive connections from
 * 127.0.0.1, each asking for `path` again as soon as its answer is read. Prints the answers
 * read and their bytes when done.
 */
const floodScript = `
const http = require("node:http");
const [port, path, clients, ms] = process.argv.slice(1).map((a, i) => (i === 1 ? a : Number(a)));
const until = Date.now() + ms;
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
let answers = 0, bytes = 0;
const one = () => new Promise((resolve) => {
  const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
    res.on("data", (c) => { bytes += c.length; });
    res.once("end", () => { if (res.statusCode === 200) answers++; resolve(); });
    res.once("error", () => resolve());
  });
  req.once("error", () => resolve());
});
const client = async () => { while (Date.now() < until) await one(); };
Promise.all(Array.from({ length: clients }, client)).then(() => {
  agent.destroy();
  process.stdout.write(answers + " " + bytes);
});
`;

/** Run the flood; resolves with the answers it read and their bytes. */
async function flood(path: string, clients: number, ms: number) {
  const [answers, bytes] = await runAttacker(floodScript, [served.port, path, clients, ms]);
  return { answers: answers!, bytes: bytes! };
}

it("serves a client from another address beside a flood of large static files as it is served alone", {
  timeout: 120_000,
}, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: "127.0.0.2" });
  try {
    for (let i = 0; i < 20; i++) await controlCall(agent, "/docs/docs.js"); // warm-up
    // The control alone, then beside the flood once it runs, which ends just after that.
    const alone = await controlCalls(agent, 6_000);
    const attackDone = flood("/docs/swagger-ui-bundle.js", 100, 1_000 + 5_000 + 500);
    // The flood's clients connect and ask in the first moments: measure once it runs.
    await new Promise((r) => setTimeout(r, 1_000));
    const beside = await controlCalls(agent, 5_000);
    const { answers, bytes } = await attackDone;
    const ms = (xs: number[]) =>
      `median ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms`;
    const ratio = quantile(beside.cpu, 0.99) / quantile(alone.cpu, 0.99);
    console.log(
      `control alone: ${alone.wall.length} calls, ${ms(alone.wall)}, server CPU a call ${ms(alone.cpu)}; ` +
        `beside the flood (${answers} answers, ${(bytes / 1e6).toFixed(0)} MB): ${beside.wall.length} calls, ` +
        `${ms(beside.wall)}, server CPU a call ${ms(beside.cpu)}; CPU p99 ratio ` +
        `${ratio.toFixed(1)}; load ${loadavg()[0]?.toFixed(1)}`,
    );
    expect([...alone.wall, ...beside.wall].filter((t) => Number.isNaN(t))).toEqual([]);
    // The flood ran, and was served: its clients read answers all along.
    expect(answers).toBeGreaterThan(100);
    // Goal 2x of wall time (bench/hostile.ts measures it); generous here. Before: 33-55x.
    expect(ratio).toBeLessThan(25);
  } finally {
    agent.destroy();
  }
});
