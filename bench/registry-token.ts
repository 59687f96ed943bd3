/**
 * What an anonymous registry token request costs by the depth of the names it asks about
 * (issue 35, N7): one scope naming a repo of an organization (`acme/app`) against sixteen
 * different scopes each naming a repo under a chain of 50 nested groups, all of which exist
 * (the most group levels a name can walk). Gatehouse in this process (SQLite in a temporary
 * file), requests one at a time over loopback HTTP, alternating rounds; CPU of this process
 * per request (client included, the same for both) and the ratio of the two, same run.
 *
 *   npm run build && node dist/bench/registry-token.js [requests-per-round] [rounds]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ownerRole, storeRoles } from "../src/auth/capabilities.js";
import { loadConfig } from "../src/config.js";
import { createServer } from "../src/server.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { newChildUid, newRootUid } from "../src/uid.js";

const perRound = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 5);
const depth = 50;

const dir = mkdtempSync(join(tmpdir(), "gatehouse-bench-registry-"));
const config = loadConfig([], {
  GATEHOUSE_DB: join(dir, "gatehouse.db"),
  GATEHOUSE_LOG_LEVEL: "silent",
  GATEHOUSE_PORT: "0",
  GATEHOUSE_BASE_URL: "http://127.0.0.1:0",
  GATEHOUSE_REGISTRY_AUDIENCE: "registry.bench.test",
});
const store = createSqliteStore(config.dbPath, { roles: storeRoles });
const server = await createServer({ config, store });
const { port } = await server.listen();

const now = Date.now();
const person = await store.upsertPerson({
  uid: newRootUid(),
  issuer: "https://users.bench",
  subject: "p",
  name: "P",
  email: "",
  now,
});
const org = newRootUid();
await store.createOrganization(
  { uid: org, name: "acme", description: "", now },
  { bindingUid: newChildUid(org), identityUid: person.uid, roleUid: ownerRole.uid },
);
await store.createRepo({
  uid: newChildUid(org),
  groupUid: org,
  name: "app",
  description: "",
  aliases: [],
  public: true,
  now,
});
let group = org;
for (let i = 0; i < depth; i++) {
  const uid = newChildUid(group);
  await store.createGroup({ uid, parentUid: group, name: "a", description: "", now });
  group = uid;
}
// Sixteen different names (a request's most), each walking all 50 groups and missing its repo.
const deepScopes = Array.from(
  { length: 16 },
  (_, i) => `&scope=repository:acme/${"a/".repeat(depth)}x${i}:pull`,
);
const plain = "service=registry.bench.test&scope=repository:acme/app:pull";
const deep = `service=registry.bench.test${deepScopes.join("")}`;
// As many different names, each an organization's own repo name: what depth adds to them.
const wide = `service=registry.bench.test${deepScopes.map((_, i) => `&scope=repository:acme/x${i}:pull`).join("")}`;

async function round(query: string): Promise<{ cpuUs: number; wallMs: number; status: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let status = 0;
  for (let i = 0; i < perRound; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/registry/token?${query}`);
    status = res.status;
    await res.arrayBuffer();
  }
  const used = process.cpuUsage(cpu);
  return {
    cpuUs: (used.user + used.system) / perRound,
    wallMs: (performance.now() - start) / perRound,
    status,
  };
}

await round(plain);
await round(deep);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const plainCpu: number[] = [];
const wideCpu: number[] = [];
const deepCpu: number[] = [];
let deepStatus = 0;
for (let r = 0; r < rounds; r++) {
  plainCpu.push((await round(plain)).cpuUs);
  wideCpu.push((await round(wide)).cpuUs);
  const d = await round(deep);
  deepCpu.push(d.cpuUs);
  deepStatus = d.status;
}
const p = median(plainCpu);
const w = median(wideCpu);
const d = median(deepCpu);
const ms = (us: number) => `${(us / 1000).toFixed(2)} ms`;
console.log(
  `registry token, anonymous, CPU per request: plain (1 scope, acme/app) ${ms(p)}; ` +
    `16 scopes of an organization's repos ${ms(w)} (${(w / p).toFixed(1)}x plain); ` +
    `16 scopes ${depth} groups deep (answer ${deepStatus}) ${ms(d)} (${(d / p).toFixed(1)}x plain, ` +
    `${(d / w).toFixed(1)}x the shallow 16); medians of ${rounds} rounds of ${perRound}; ` +
    `load ${loadavg()[0]!.toFixed(1)}`,
);
await server.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
