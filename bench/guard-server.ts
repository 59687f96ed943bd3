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

const [db, issuer] = process.argv.slice(2);
if (!db || !issuer) {
  console.error("usage: guard-server <db file> <issuer url>");
  process.exit(2);
}
const config = loadConfig([], {
  GATEHOUSE_HOST: "127.0.0.1",
  GATEHOUSE_PORT: "0",
  GATEHOUSE_DB: db,
  // Per-request info lines would measure the logger; warnings and errors still show.
  GATEHOUSE_LOG_LEVEL: "warn",
  GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
});
const store = createSqliteStore(config.dbPath, { roles: storeRoles, backgroundCheckpoints: {} });
const now = Date.now();
const person = await store.upsertPerson({
  uid: newRootUid(),
  issuer: "https://users.bench",
  subject: "owner",
  name: "owner",
  email: "",
  now,
});
const org = newRootUid();
await store.createOrganization(
  { uid: org, name: "guard", description: "", now },
  { bindingUid: newChildUid(org), identityUid: person.uid, roleUid: ownerRole.uid },
);
// The seed's creates in one transaction: one commit instead of 1,110.
let level = [org];
await store.atomically(async (tx) => {
  for (let depth = 1; depth <= 3; depth++) {
    const next: string[] = [];
    for (const parent of level) {
      for (let i = 0; i < 10; i++) {
        const uid = newChildUid(parent);
        await tx.createGroup({
          uid,
          parentUid: parent,
          name: `g${depth}-${next.length}`,
          description: "a group of the guard's dataset",
          now,
        });
        next.push(uid);
      }
    }
    level = next;
  }
});
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
const { token } = await server.tokens.issue(person.uid, config.baseUrl);
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
