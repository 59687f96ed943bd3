/**
 * One side of an A/B benchmark (bench/setting-ab.ts): a Gatehouse on its own SQLite file (synchronous
 * FULL, as served), or on the PostgreSQL database its settings name (GATEHOUSE_DATABASE_URL), in a process of its own so that its CPU time is its own, with an
 * organization, a person owning it and a group in it. Prints one JSON line,
 * `{port, metricsPort, org, group, token}`, then serves until SIGTERM. With a sink URL, the
 * organization also has a webhook subscription to every group creation on that sink (http on
 * loopback allowed, the outbox read every 100 ms).
 *
 *   node dist/bench/ab-server.js <db file> <events on|off> <metrics on|off> [sink url]
 */
import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { loadConfig } from "../src/config.js";
import { createServer } from "../src/server.js";
import { createPostgresStore } from "../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

const [db, events, metrics, sink] = process.argv.slice(2);
if (!db || !["on", "off"].includes(events ?? "") || !["on", "off"].includes(metrics ?? "")) {
  console.error("usage: ab-server <db file> <events on|off> <metrics on|off> [sink url]");
  process.exit(2);
}
const config = loadConfig([], {
  GATEHOUSE_HOST: "127.0.0.1",
  GATEHOUSE_PORT: "0",
  GATEHOUSE_DB: db,
  GATEHOUSE_LOG_LEVEL: "silent",
  GATEHOUSE_DOMAIN: "gatehouse.bench",
  // Port 0: a free port, as for the API.
  GATEHOUSE_METRICS_PORT: metrics === "on" ? "0" : "",
  GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: sink ? "true" : "false",
  GATEHOUSE_WEBHOOK_POLL_MS: "100",
  // The side's own settings (bench/setting-ab.ts AbSide.settings).
  ...(JSON.parse(process.env.AB_SETTINGS ?? "{}") as Record<string, string>),
});
// GATEHOUSE_DATABASE_URL in the side's settings: PostgreSQL (bench/events.ts --pg).
const store =
  config.databaseUrl === ""
    ? createSqliteStore(config.dbPath, { roles: storeRoles, backgroundCheckpoints: {} })
    : await createPostgresStore(config.databaseUrl, {
        roles: storeRoles,
        timeoutMs: config.dbTimeoutMs,
      });
// auditTrail exists for this comparison only: served, every change records its event.
const server = await createServer({ config, store, auditTrail: events === "on" });
const address = await server.listen();
const person = await store.upsertPerson({
  uid: newRootUid(),
  issuer: "https://users.bench",
  subject: "owner",
  name: "owner",
  email: "",
  now: Date.now(),
});
const org = newRootUid();
await store.createOrganization(
  { uid: org, name: "bench", description: "", now: Date.now() },
  { bindingUid: newChildUid(org), identityUid: person.uid, roleUid: ownerRole.uid },
);
const group = await store.createGroup({
  uid: newChildUid(org),
  parentUid: org,
  name: "read-me",
  description: "the group GetGroup reads",
  now: Date.now(),
});
if (sink) {
  await store.createSubscription({
    uid: newChildUid(org),
    groupUid: org,
    name: "slow",
    description: "",
    sink,
    eventTypes: ["dev.gatehouse.iam.group.created.v1"],
    secret: "whsec_bench",
    now: Date.now(),
  });
}
const { token } = await server.tokens.issue(person.uid, config.baseUrl);
console.log(
  JSON.stringify({
    port: address.port,
    metricsPort: server.metricsPort ?? 0,
    org,
    group: group.uid,
    token,
  }),
);
process.once("SIGTERM", async () => {
  await server.close();
  await store.close();
  process.exit(0);
});
