import type { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { connectErr } from "../helpers/groups-clients.js";
import { type IamClients, iamClients, transportFor } from "../helpers/iam-clients.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

/**
 * Every RPC, every kind of caller, against resources of organization A: the expected code per
 * cell, and nothing of A in any answer to a caller outside it. To cover another service, add
 * its clients to IamClients and its rows to `rpcs`.
 */

const callers = ["ownerA", "viewerA", "ownerB", "unbound", "anonymous"] as const;
type CallerName = (typeof callers)[number];
type Expect = Record<CallerName, number>;

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
// The secret every organization-A resource carries in its name, so a leak is easy to spot.
const secret = "alpha-secret";

/** Fresh resources of organization A, one set per cell, so that writes do not interfere. */
interface Fixture {
  org: string;
  group: string;
  leaf: string;
  identity: string;
  role: string;
  freeRole: string;
  binding: string;
  missing: string;
}

interface RpcCase {
  rpc: string;
  call: (c: IamClients, fx: Fixture) => Promise<unknown>;
  expect: Expect;
  /** Lists: every caller may call; this is what a caller outside A may see. */
  list?: true;
}

// Expected codes: 0 OK, 3 INVALID_ARGUMENT, 5 NOT_FOUND, 7 PERMISSION_DENIED, 16 UNAUTHENTICATED.
const read: Expect = { ownerA: 0, viewerA: 0, ownerB: 7, unbound: 7, anonymous: 16 };
const write: Expect = { ownerA: 0, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 };
const missing: Expect = { ownerA: 5, viewerA: 5, ownerB: 7, unbound: 7, anonymous: 16 };
const missingWrite: Expect = { ownerA: 5, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 };
const list: Expect = { ownerA: 0, viewerA: 0, ownerB: 0, unbound: 0, anonymous: 16 };
const within = (fx: Fixture) => ({ descendantsOf: fx.org, childrenOf: "" });

const rpcs: RpcCase[] = [
  // GroupsService
  { rpc: "ListGroups", call: (c) => c.groups.listGroups({}), expect: list, list: true },
  {
    rpc: "ListGroups under A",
    call: (c, fx) => c.groups.listGroups({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetGroup", call: (c, fx) => c.groups.getGroup({ uid: fx.group }), expect: read },
  {
    rpc: "GetGroup missing",
    call: (c, fx) => c.groups.getGroup({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateGroup",
    call: (c, fx) => c.groups.createGroup({ parent: fx.org, group: { name: "new" } }),
    expect: write,
  },
  {
    rpc: "CreateGroup organization",
    call: (c) => c.groups.createGroup({ parent: "", group: { name: "mine" } }),
    // Only a person may create an organization; both owners here are persons.
    expect: { ownerA: 0, viewerA: 7, ownerB: 0, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "UpdateGroup",
    call: (c, fx) => c.groups.updateGroup({ group: { uid: fx.group, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateGroup missing",
    call: (c, fx) => c.groups.updateGroup({ group: { uid: fx.missing, description: "x" } }),
    expect: missingWrite,
  },
  { rpc: "DeleteGroup", call: (c, fx) => c.groups.deleteGroup({ uid: fx.leaf }), expect: write },
  {
    rpc: "DeleteGroup missing",
    call: (c, fx) => c.groups.deleteGroup({ uid: fx.missing }),
    expect: missingWrite,
  },
  // IdentitiesService
  { rpc: "ListIdentities", call: (c) => c.identities.listIdentities({}), expect: list, list: true },
  {
    rpc: "ListIdentities under A",
    call: (c, fx) => c.identities.listIdentities({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetIdentity",
    call: (c, fx) => c.identities.getIdentity({ uid: fx.identity }),
    expect: read,
  },
  {
    rpc: "GetIdentity missing",
    call: (c, fx) => c.identities.getIdentity({ uid: `${fx.group}/0000000000000000` }),
    expect: missing,
  },
  {
    rpc: "CreateIdentity",
    call: (c, fx) =>
      c.identities.createIdentity({
        parent: fx.group,
        identity: {
          name: "new",
          method: { case: "claimMatch", value: { issuer: "https://i.test", subject: "s" } },
        },
      }),
    expect: write,
  },
  {
    rpc: "UpdateIdentity",
    call: (c, fx) =>
      c.identities.updateIdentity({ identity: { uid: fx.identity, description: "x" } }),
    expect: write,
  },
  {
    rpc: "DeleteIdentity",
    call: (c, fx) => c.identities.deleteIdentity({ uid: fx.identity }),
    expect: write,
  },
  // RolesService
  { rpc: "ListRoles", call: (c) => c.roles.listRoles({}), expect: list, list: true },
  {
    rpc: "ListRoles under A",
    call: (c, fx) => c.roles.listRoles({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetRole", call: (c, fx) => c.roles.getRole({ uid: fx.role }), expect: read },
  {
    rpc: "GetRole built-in",
    call: (c) => c.roles.getRole({ uid: viewer.uid }),
    // Built-in roles are the same everywhere: anyone who may list roles somewhere reads them.
    expect: { ownerA: 0, viewerA: 0, ownerB: 0, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "GetRole missing",
    call: (c, fx) => c.roles.getRole({ uid: `${fx.org}/0000000000000000` }),
    expect: missing,
  },
  {
    rpc: "CreateRole",
    call: (c, fx) =>
      c.roles.createRole({ parent: fx.org, role: { name: "new", capabilities: ["groups.list"] } }),
    expect: write,
  },
  {
    rpc: "UpdateRole",
    call: (c, fx) => c.roles.updateRole({ role: { uid: fx.role, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateRole built-in",
    call: (c) => c.roles.updateRole({ role: { uid: viewer.uid, description: "x" } }),
    expect: { ownerA: 9, viewerA: 7, ownerB: 9, unbound: 7, anonymous: 16 },
  },
  { rpc: "DeleteRole", call: (c, fx) => c.roles.deleteRole({ uid: fx.freeRole }), expect: write },
  {
    rpc: "DeleteRole bound",
    call: (c, fx) => c.roles.deleteRole({ uid: fx.role }),
    expect: { ownerA: 9, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 },
  },
  // RoleBindingsService
  {
    rpc: "ListRoleBindings",
    call: (c) => c.roleBindings.listRoleBindings({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListRoleBindings of A's identity",
    call: (c, fx) => c.roleBindings.listRoleBindings({ identity: fx.identity }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetRoleBinding",
    call: (c, fx) => c.roleBindings.getRoleBinding({ uid: fx.binding }),
    expect: read,
  },
  {
    rpc: "CreateRoleBinding",
    call: (c, fx) =>
      c.roleBindings.createRoleBinding({
        parent: fx.group,
        roleBinding: { identityUid: fx.identity, roleUid: viewer.uid },
      }),
    expect: write,
  },
  {
    rpc: "UpdateRoleBinding",
    call: (c, fx) =>
      c.roleBindings.updateRoleBinding({ roleBinding: { uid: fx.binding, roleUid: editor.uid } }),
    expect: write,
  },
  {
    rpc: "DeleteRoleBinding",
    call: (c, fx) => c.roleBindings.deleteRoleBinding({ uid: fx.binding }),
    expect: write,
  },
];

let ts: TestServer;
let orgA: TestOrg;
let orgB: TestOrg;
const clients = {} as Record<CallerName, IamClients>;

beforeAll(async () => {
  ts = await startTestServer();
  orgA = await ts.makeOrg(`${secret}-org`);
  orgB = await ts.makeOrg("bravo");
  const viewerA = await ts.makeIdentity(orgA.uid, ["viewer"]);
  const unbound = await ts.makeIdentity(orgA.uid);
  // Organization B has data of its own, so that its lists are not trivially empty.
  const bGroup = newChildUid(orgB.uid);
  await ts.store.createGroup({
    uid: bGroup,
    parentUid: orgB.uid,
    name: "b-team",
    description: "",
    now: 1,
  });
  await ts.makeIdentity(bGroup, ["viewer"]);
  const headers: Record<CallerName, Record<string, string>> = {
    ownerA: orgA.owner.headers,
    viewerA: viewerA.headers,
    ownerB: orgB.owner.headers,
    unbound: unbound.headers,
    anonymous: {},
  };
  for (const name of callers)
    clients[name] = iamClients(transportFor("connect", ts.url, headers[name]));
});
afterAll(async () => {
  await ts?.close();
});

let n = 0;
async function fixture(): Promise<Fixture> {
  const { store } = ts;
  const org = orgA.uid;
  const now = Date.now();
  const group = newChildUid(org);
  const leaf = newChildUid(org);
  await store.createGroup({
    uid: group,
    parentUid: org,
    name: `${secret}-g${++n}`,
    description: "",
    now,
  });
  await store.createGroup({
    uid: leaf,
    parentUid: org,
    name: `${secret}-l${n}`,
    description: "",
    now,
  });
  const identity = await ts.makeIdentity(group);
  await store.updateIdentity(identity.uid, { name: `${secret}-i${n}` }, now);
  const role = newChildUid(org);
  const freeRole = newChildUid(org);
  for (const uid of [role, freeRole]) {
    await store.createRole({
      uid,
      groupUid: org,
      name: `${secret}-r${n}`,
      description: secret,
      capabilities: ["groups.list"],
      now,
    });
  }
  const binding = newChildUid(group);
  await store.createRoleBinding({
    uid: binding,
    groupUid: group,
    identityUid: identity.uid,
    roleUid: role,
    now,
  });
  return {
    org,
    group,
    leaf,
    identity: identity.uid,
    role,
    freeRole,
    binding,
    missing: `${org}/ffffffffffffffff`,
  };
}

/** Everything of organization A that must never reach a caller outside it. */
function secretsOf(fx: Fixture): string[] {
  return [secret, fx.org, fx.group, fx.leaf, fx.identity, fx.role, fx.freeRole, fx.binding];
}

const cells = rpcs.flatMap((r) =>
  callers.map((caller) => [r.rpc, caller, r.expect[caller], r] as const),
);

describe("cross-organization matrix", () => {
  it.each(cells)("%s by %s: code %i", async (_rpc, caller, code, r) => {
    const fx = await fixture();
    let answer: unknown;
    let got: Code | 0 = 0;
    try {
      answer = await r.call(clients[caller], fx);
    } catch (e) {
      const err = connectErr(e);
      got = err.code;
      answer = err.message;
    }
    expect(got).toBe(code);
    if (caller === "ownerA" || caller === "viewerA") return;
    // Outside organization A: nothing of it, in any answer, error messages included (a uid
    // the caller sent may be echoed back only in the request-shaped part of an error).
    const text = typeof answer === "string" ? answer : JSON.stringify(toPlain(answer));
    for (const s of secretsOf(fx)) {
      if (typeof answer === "string" && s !== secret) continue;
      expect(text).not.toContain(s);
    }
    if (r.list && answer && typeof answer === "object" && "totalCount" in answer) {
      // totalCount counts only what the caller may list: what the page shows.
      const page = answer as { totalCount: bigint } & Record<string, unknown>;
      const items = Object.values(page).find(Array.isArray) as unknown[];
      expect(page.totalCount).toBe(BigInt(items.length));
    }
  });

  it("covers every RPC of the IAM services it names", () => {
    const names = new Set(rpcs.map((r) => r.rpc.split(" ")[0]));
    for (const service of Object.values(clients.ownerA)) {
      for (const method of Object.keys(service)) {
        expect(names).toContain(method[0]!.toUpperCase() + method.slice(1));
      }
    }
  });
});

function toPlain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v ?? null, (_k, x) => (typeof x === "bigint" ? String(x) : x)));
}
