/**
 * What metrics cost a read: GetGroup with GATEHOUSE_METRICS_PORT set against unset, on two
 * Gatehouse processes (bench/setting-ab.ts: alternating rounds, the server's rate and CPU per call,
 * medians; the ratios are of this run), on the three ways in: the lean unary Connect path
 * (Connect over HTTP/1.1), the lean unary gRPC path (grpc-js over HTTP/2) and the router (REST
 * GET through the gateway). At the end the "on" server's /metrics must have counted the calls.
 *
 *   npm run build && node dist/bench/metrics.js [seconds-per-round] [pairs]
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { grpcCaller } from "./groups-proto.js";
import {
  type AbLoad,
  type AbTarget,
  closedLoop,
  loadNote,
  measureAb,
  printAb,
  startAb,
} from "./setting-ab.js";

const seconds = Number(process.argv[2] ?? 2);
const pairs = Number(process.argv[3] ?? 6);
const inFlight = 16;

/** A client per target, made on its first round. */
function perTarget<C>(make: (t: AbTarget) => C): (t: AbTarget) => C {
  const made = new Map<AbTarget, C>();
  return (t) => {
    const c = made.get(t) ?? make(t);
    made.set(t, c);
    return c;
  };
}

const connect = perTarget((t) =>
  createClient(
    GroupsService,
    createConnectTransport({
      baseUrl: `http://127.0.0.1:${t.port}`,
      httpVersion: "1.1",
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${t.token}`);
          return next(req);
        },
      ],
    }),
  ),
);
const grpc = perTarget((t) => grpcCaller(t.port, { authorization: `Bearer ${t.token}` }, t.group));

const loads: [string, AbLoad][] = [
  [
    "GetGroup, Connect (lean unary path)",
    (t, until) => closedLoop(inFlight, until, () => connect(t).getGroup({ uid: t.group })),
  ],
  [
    "GetGroup, gRPC (grpc-js, lean unary path)",
    (t, until) => closedLoop(inFlight, until, grpc(t).send),
  ],
  [
    "GetGroup, REST (router and gateway)",
    (t, until) =>
      closedLoop(inFlight, until, async () => {
        const res = await fetch(`http://127.0.0.1:${t.port}/iam/v2beta1/groups/${t.group}`, {
          headers: { authorization: `Bearer ${t.token}` },
        });
        if (res.status !== 200) throw new Error(`GetGroup answered ${res.status}`);
        await res.arrayBuffer();
      }),
  ],
];

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
  for (const c of [ab.a, ab.b]) grpc(c).close();
} finally {
  await ab.close();
}
