/**
 * What the rate limit costs a call: GetGroup with GATEHOUSE_RATE_LIMIT set (so high that no
 * call is refused: the bucket's bookkeeping is what is measured) against unset, on two
 * Gatehouse processes (bench/setting-ab.ts: alternating rounds, the server's rate and CPU per
 * call, medians; the ratios are of this run), on the three ways in: the lean unary Connect
 * path (Connect over HTTP/1.1), the lean unary gRPC path (grpc-js over HTTP/2) and REST (the
 * gateway). At the end the "on" server must refuse a second STS exchange (its STS limit is one
 * an hour), so that the figures are known to be of a server whose limits were on.
 *
 *   npm run build && node dist/bench/rate-limit.js [seconds-per-round] [pairs] [aa]
 *
 * `aa`: the control, both sides without the limit (what the two processes differ by when
 * nothing differs: which one started first, their files), to read the A/B's ratios against.
 */
import { createContextValues } from "@connectrpc/connect";
import { kCallInfo } from "../src/call-info.js";
import { loadConfig } from "../src/config.js";
import { createCallLimit } from "../src/rate-limit/call-limit.js";
import { getGroupLoads } from "./get-group-loads.js";
import { loadNote, measureAb, printAb, startAb } from "./setting-ab.js";

const seconds = Number(process.argv[2] ?? 2);
const pairs = Number(process.argv[3] ?? 6);
const inFlight = 16;
const control = process.argv[4] === "aa";

const { loads, close: closeClients } = getGroupLoads(inFlight);

/**
 * The limit's own cost, in this process: access control's check (a stub that admits at once)
 * bare and wrapped by the limit, in alternating rounds; nanoseconds per call, medians. The
 * servers' figures below are the whole call's, and on a loaded machine their noise is larger
 * than the limit.
 */
async function admissionCost(): Promise<{ bare: number; limited: number }> {
  const { rateLimits } = loadConfig([], {
    GATEHOUSE_RATE_LIMIT: "999999999/1s",
    GATEHOUSE_RATE_LIMIT_ORGS: "ffffffff=10/1m",
  });
  const bare = async () => undefined;
  const limit = createCallLimit({
    settings: rateLimits,
    now: Date.now,
    refusal: bare,
    // A workload identity of an organization: the override table is looked up too.
    identityOf: () => "0123abcd/4567ef01",
    stsRpcs: new Set(["gatehouse.sts.v1.SecurityTokenService/Exchange"]),
    exempt: new Set(),
  });
  const rpc = "gatehouse.iam.v2beta1.GroupsService/GetGroup";
  const round = async (check: typeof limit.refusal, n: number) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const values = createContextValues().set(kCallInfo, {
        connection: { remoteAddress: "127.0.0.1" },
      });
      await check(rpc, "Bearer x", undefined, values);
    }
    return Number(process.hrtime.bigint() - t0) / n;
  };
  const n = 200_000;
  await round(bare, n);
  await round(limit.refusal, n);
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 7; i++) {
    a.push(await round(bare, n));
    b.push(await round(limit.refusal, n));
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
  return { bare: median(a), limited: median(b) };
}

const cost = await admissionCost();
console.log(
  `admission in-process: bare ${cost.bare.toFixed(0)} ns, with the limit ${cost.limited.toFixed(0)} ns a call: the limit adds ${(cost.limited - cost.bare).toFixed(0)} ns`,
);

const ab = await startAb(
  {
    name: "limit-on",
    events: "on",
    metrics: "off",
    settings: control
      ? {}
      : {
          GATEHOUSE_RATE_LIMIT: "999999999/1s",
          // An override for another organization: each call also looks its own up.
          GATEHOUSE_RATE_LIMIT_ORGS: "ffffffff=10/1m",
          GATEHOUSE_STS_RATE_LIMIT: "1/1h",
        },
  },
  { name: "limit-off", events: "on", metrics: "off" },
);
try {
  console.log(`${pairs} pairs of ${seconds} s rounds, ${inFlight} in flight; ${loadNote()}`);
  for (const [label, load] of loads) {
    printAb(label, await measureAb(ab, load, { seconds, pairs }), "on", "off");
  }
  if (control) {
    console.log("control run (aa): both sides without the limit");
    process.exitCode = 0;
  }
  const sts = () => fetch(`http://127.0.0.1:${ab.a.port}/sts/exchange?aud=x`, { method: "POST" });
  await sts();
  const second = await sts();
  if (!control && second.status !== 429)
    throw new Error(`limit on, but a second STS exchange answered ${second.status}`);
  if (!control) console.log("limit-on refused a second STS exchange with 429: its limits were on");
  closeClients([ab.a, ab.b]);
} finally {
  await ab.close();
}
