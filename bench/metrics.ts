import { getGroupLoads } from "./get-group-loads.js";
import { loadNote, measureAb, printAb, startAb } from "./setting-ab.js";

const seconds = Number(process.argv[2] ?? 2);
const pairs = Number(process.argv[3] ?? 6);
const inFlight = 16;

const { loads, close: closeClients } = getGroupLoads(inFlight);

const ab = await startAb(
  { name: "metrics-on", events: "on", metrics: "on" },
  { name: "metrics-off", events: "on", metrics: "off" },
);
try {
  console.log(`${pairs} pairs of ${seconds} s rounds, ${inFlight} in flight; ${loadNote()}`);
  for (const [label, load] of loads) {
    printAb(label, await measureAb(ab, load, { seconds, pairs }), "on", "off");
  }
  // The figures are only worth something if the calls were counted.
  const text = await (await fetch(`http://127.0.0.1:${ab.a.metricsPort}/metrics`)).text();
  const counted = text
    .split("\n")
    .filter((l) => l.startsWith("gatehouse_rpc_requests_total{") && l.includes('method="GetGroup"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  if (counted === 0) throw new Error("metrics on, but no GetGroup call was counted");
  console.log(`GetGroup calls counted at /metrics: ${counted}`);
  closeClients([ab.a, ab.b]);
} finally {
  await ab.close();
}
