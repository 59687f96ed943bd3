/**
 * What the audit trail costs a write: CreateGroup (Connect over HTTP/1.1, 16 in flight) on
 * two Gatehouses in this process, each on its own SQLite file (synchronous FULL, as served),
 * one recording events and one not. Rounds alternate between them so that both see the same
 * machine; the figure is the ratio of their throughputs in this run.
 *
 *   npm run build && node dist/bench/events.js [seconds-per-round] [rounds]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { loadConfig } from "../src/config.js";
import { createServer } from "../src/server.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 3);
const inFlight = 16;
const dir = mkdtempSync(join(tmpdir(), "gatehouse-events-bench-"));

async function start(name: string, auditTrail: boolean) {
  const config = loadConfig([], {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: "0",
    GATEHOUSE_DB: join(dir, `${name}.db`),
    GATEHOUSE_LOG_LEVEL: "silent",
    GATEHOUSE_DOMAIN: "gatehouse.bench",
  });
  const store = createSqliteStore(config.dbPath, { roles: storeRoles });
  const server = await createServer({ config, store, auditTrail });
  const address = await server.listen();
  const url = typeof address === "string" ? address : `http://127.0.0.1:${address.port}`;
  const person = await store.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.bench",
    subject: name,
    name,
    email: "",
    now: Date.now(),
  });
  const org = newRootUid();
  await store.createOrganization(
    { uid: org, name, description: "", now: Date.now() },
    { bindingUid: newChildUid(org), identityUid: person.uid, roleUid: ownerRole.uid },
  );
  const { token } = await server.tokens.issue(person.uid, config.baseUrl);
  const transport = createConnectTransport({
    baseUrl: url,
    httpVersion: "1.1",
    interceptors: [
      (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      },
    ],
  });
  return { name, server, org, groups: createClient(GroupsService, transport), made: 0 };
}

type Target = Awaited<ReturnType<typeof start>>;

/** Creates per second over one round. */
async function round(t: Target): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const worker = async () => {
    while (performance.now() < end) {
      await t.groups.createGroup({ parent: t.org, group: { name: `g${t.made++}` } });
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return done / ((performance.now() - start) / 1000);
}

const on = await start("events-on", true);
const off = await start("events-off", false);
try {
  await round(on);
  await round(off); // warm-up, not counted
  const rates = { on: [] as number[], off: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    rates.off.push(await round(off));
    rates.on.push(await round(on));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const withEvents = median(rates.on);
  const without = median(rates.off);
  console.log(`CreateGroup, SQLite file, ${inFlight} in flight, ${rounds} x ${seconds} s each:`);
  console.log(`  without events: ${without.toFixed(0)}/s`);
  console.log(`  with events:    ${withEvents.toFixed(0)}/s`);
  console.log(`  ratio:          ${(withEvents / without).toFixed(3)}`);
} finally {
  await on.server.close();
  await off.server.close();
  rmSync(dir, { recursive: true, force: true });
}
