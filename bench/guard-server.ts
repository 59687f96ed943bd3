/**
 * One side of `npm run bench:guard` (bench/guard.ts): a Gatehouse built from one checkout, on
 * its own SQLite file (synchronous FULL, as served), seeded with its own code with a small
 * dataset: an organization with 1,110 groups under it (fan-out 10, depth 3), a person who
 * owns it, and a workload identity that the given OIDC issuer's default token (`sub`
 * "workload", `aud` "gatehouse") matches. Each checkout seeds with its own store, so the two
 * sides never share a schema. Prints one JSON line, `{port, baseUrl, org, leaf, parent,
 * identity, token}`, then serves until SIGTERM.
 *
 *   node dist/bench/guard-server.js <db file> <issuer url>
 */
import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { loadConfig } from "../src/config.js";
import { createServer } from "../src/server.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";
import { benchServerEnv, seedGuardGroups, seedOwnedOrganization } from "./guard-dataset.js";

const [db, issuer] = process.argv.slice(2);
if (!db || !issuer) {
  console.error("usage: guard-server <db file> <issuer url>");
  process.exit(2);
}
const config = loadConfig([], benchServerEnv(db));
const store = createSqliteStore(config.dbPath, { roles: storeRoles, backgroundCheckpoints: {} });
const now = Date.now();
const ids = { newRootUid, newChildUid, ownerRoleUid: ownerRole.uid };
const { person, org } = await seedOwnedOrganization(store, ids, "guard", now);
const level = await seedGuardGroups(store, ids, org, now);
const leaf = level[level.length - 1]!;
const parent = level[0]!;
const identity = await store.createIdentity({
  uid: newChildUid(parent),
  groupUid: parent,
  name: "guard workload",
  description: "",
  claimMatch: {
    issuer,
    issuerPattern: "",
    subject: "workload",
    subjectPattern: "",
    audience: "gatehouse",
    audiencePattern: "",
    claims: {},
    claimPatterns: {},
  },
  now,
});
const server = await createServer({ config, store });
const address = await server.listen();
const { token } = await server.tokens.issue(person, config.baseUrl);
console.log(
  JSON.stringify({
    port: address.port,
    baseUrl: config.baseUrl,
    org,
    leaf,
    parent,
    identity: identity.uid,
    token,
  }),
);
process.once("SIGTERM", async () => {
  await server.close();
  await store.close();
  process.exit(0);
});
