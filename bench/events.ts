/**
 * What the audit trail costs a write: CreateGroup (Connect over HTTP/1.1, 16 in flight, the
 * lean unary path) on two Gatehouse processes, each on its own SQLite file (synchronous FULL,
 * as served), one recording events and one not (bench/setting-ab.ts: alternating rounds, the server's
 * rate and CPU per call, medians; the ratios are of this run).
 *
 * And what a slow webhook sink costs the API: a second pair, a Gatehouse recording events whose
 * organization has a subscription to every group creation on a sink (in this process, on
 * 127.0.0.1) that answers each delivery after 2 s, against one recording events with no
 * subscription; rate, CPU per call and client latency, same run. The deliveries pile up in the
 * outbox, off the request path.
 *
 *   npm run build && node dist/bench/events.js [seconds-per-round] [pairs] [--pg]
 *
 * `--pg`: the first pair only, each side on its own database of one embedded PostgreSQL.
 */
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { groupsClient } from "./get-group-loads.js";
import { startBenchPostgres } from "./postgres-server.js";
import {
  type AbSide,
  type AbTarget,
  closedLoop,
  loadNote,
  measureAb,
  printAb,
  startAb,
} from "./setting-ab.js";

const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const seconds = Number(positional[0] ?? 2);
const pairs = Number(positional[1] ?? 6);
const inFlight = 16;
// --pg: the CreateGroup pair on PostgreSQL (one embedded server, a database a side) instead
// of SQLite files; the slow-sink pair is skipped.
const onPostgres = process.argv.includes("--pg");

/** CreateGroup A/B between two sides; each call's latency (ms) by target port. */
async function createGroupAb(a: AbSide, b: AbSide) {
  const ab = await startAb(a, b);
  try {
    const clients = new Map<AbTarget, ReturnType<typeof groupsClient>>();
    const latencies = new Map<AbTarget, number[]>();
    let made = 0;
    const figures = await measureAb(
      ab,
      (t, until) => {
        const g = clients.get(t) ?? groupsClient(t);
        clients.set(t, g);
        const lat = latencies.get(t) ?? [];
        latencies.set(t, lat);
        return closedLoop(inFlight, until, async () => {
          const began = performance.now();
          await g.createGroup({ parent: t.org, group: { name: `g${made++}` } });
          lat.push(performance.now() - began);
        });
      },
      { seconds, pairs },
    );
    return { figures, latency: { a: latencies.get(ab.a) ?? [], b: latencies.get(ab.b) ?? [] } };
  } finally {
    await ab.close();
  }
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;
const lat = (xs: number[]) =>
  `p50 ${pct(xs, 0.5).toFixed(1)} ms, p99 ${pct(xs, 0.99).toFixed(1)} ms`;

console.log(`${pairs} pairs of ${seconds} s rounds, ${inFlight} in flight; ${loadNote()}`);
if (onPostgres) {
  const pg = await startBenchPostgres();
  try {
    const on = await pg.createDatabase("events_on");
    const off = await pg.createDatabase("events_off");
    const pgEvents = await createGroupAb(
      { name: "events-on", events: "on", metrics: "off", settings: { GATEHOUSE_DATABASE_URL: on } },
      {
        name: "events-off",
        events: "off",
        metrics: "off",
        settings: { GATEHOUSE_DATABASE_URL: off },
      },
    );
    printAb(
      "CreateGroup, PostgreSQL (embedded, a database a side)",
      pgEvents.figures,
      "events",
      "none",
    );
    console.log(`  ${loadNote()}`);
  } finally {
    await pg.stop();
  }
  process.exit(0);
}
const events = await createGroupAb(
  { name: "events-on", events: "on", metrics: "off" },
  { name: "events-off", events: "off", metrics: "off" },
);
printAb("CreateGroup, SQLite file (synchronous FULL)", events.figures, "events", "none");

// The slow sink: every delivery answered 204 after 2 s.
let slowDeliveries = 0;
const sink = createHttpServer((req, res) => {
  req.resume();
  setTimeout(() => {
    slowDeliveries++;
    res.statusCode = 204;
    res.end();
  }, 2000);
});
await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
try {
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
  const slow = await createGroupAb(
    { name: "slow-sink", events: "on", metrics: "off", sink: sinkUrl },
    { name: "no-sink", events: "on", metrics: "off" },
  );
  printAb("CreateGroup with events, a 2 s sink subscribed or none", slow.figures, "sink", "none");
  console.log(`  client latency:         sink ${lat(slow.latency.a)}; none ${lat(slow.latency.b)}`);
  console.log(`  the slow sink answered ${slowDeliveries} deliveries during the run`);
} finally {
  sink.closeAllConnections();
  sink.close();
}
