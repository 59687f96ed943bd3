/**
 * One side of an A/B benchmark (bench/setting-ab.ts): a Gatehouse on its own SQLite file (synchronous
 * FULL, as served), in a process of its own so that its CPU time is its own, with an
 * organization, a person owning it and a group in it. Prints one JSON line,
 * `{port, metricsPort, org, group, token}`, then serves until SIGTERM.
 *
 *   node dist/bench/ab-server.js <db file> <events on|off> <metrics on|off>
 */
import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { loadConfig } from "../src/config.js";
import { createServer } from "../src/server.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

const [db, events, metrics] = process.argv.slice(2);
if (!db || !["on", "off"].includes(events ?? "") || !["on", "off"].includes(metrics ?? "")) {
  console.error("usage: ab-server <db file> <events on|off> <metrics on|off>");
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
});
const store = createSqliteStore(config.dbPath, {
  roles: storeRoles,
  backgroundCheckpoints: {},
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
