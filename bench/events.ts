/**
 * What the audit trail costs a write: CreateGroup (Connect over HTTP/1.1, 16 in flight, the
 * lean unary path) on two Gatehouse processes, each on its own SQLite file (synchronous FULL,
 * as served), one recording events and one not (bench/setting-ab.ts: alternating rounds, the server's
 * rate and CPU per call, medians; the ratios are of this run).
 *
 *   npm run build && node dist/bench/events.js [seconds-per-round] [pairs]
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { type AbTarget, closedLoop, loadNote, measureAb, printAb, startAb } from "./setting-ab.js";

const seconds = Number(process.argv[2] ?? 2);
const pairs = Number(process.argv[3] ?? 6);
const inFlight = 16;

const ab = await startAb(
  { name: "events-on", events: "on", metrics: "off" },
  { name: "events-off", events: "off", metrics: "off" },
);
try {
  const clients = new Map<AbTarget, ReturnType<typeof groupsOf>>();
  const groupsOf = (t: AbTarget) =>
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
    );
  let made = 0;
  const figures = await measureAb(
    ab,
    (t, until) => {
      const g = clients.get(t) ?? groupsOf(t);
      clients.set(t, g);
      return closedLoop(inFlight, until, () =>
        g.createGroup({ parent: t.org, group: { name: `g${made++}` } }),
      );
    },
    { seconds, pairs },
  );
  console.log(`${pairs} pairs of ${seconds} s rounds, ${inFlight} in flight; ${loadNote()}`);
  printAb("CreateGroup, SQLite file (synchronous FULL)", figures, "events", "none");
} finally {
  await ab.close();
}
