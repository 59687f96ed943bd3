import { createClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { newChildUid } from "../../src/uid.js";
import { connectErr, connectTransports } from "../helpers/groups-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// order_by on any sortable field (seed §4): the scalar fields of each resource's message that
// its storage keeps in a column, in either direction, paged with tokens bound to the order,
// on all four protocols and both backends; anything else is INVALID_ARGUMENT naming them.

const wires = ["rest", "connect", "grpcWeb", "grpc"] as const;
type Wire = (typeof wires)[number];

/** One page of a List: the items' uids and a sort value each, or the error. */
type Page =
  | { ok: true; items: { uid: string; value: unknown }[]; next: string }
  | { ok: false; code: number; fields: string[]; message: string };

/** What one List is, over every wire. */
interface Lister {
  /** The REST path and the JSON key of the items. */
  rest: [path: string, key: string];
  rpc(t: Transport, req: Record<string, unknown>): Promise<{ items: object[]; next: string }>;
}

const lists = {
  groups: {
    rest: ["/iam/v2beta1/groups", "groups"],
    rpc: async (t, req) => {
      const r = await createClient(GroupsService, t).listGroups(req);
      return { items: r.groups, next: r.nextPageToken ?? "" };
    },
  },
  identities: {
    rest: ["/iam/v2beta1/identities", "identities"],
    rpc: async (t, req) => {
      const r = await createClient(IdentitiesService, t).listIdentities(req);
      return { items: r.identities, next: r.nextPageToken ?? "" };
    },
  },
  repos: {
    rest: ["/registry/v2beta1/repos", "repos"],
    rpc: async (t, req) => {
      const r = await createClient(ReposService, t).listRepos(req);
      return { items: r.repos, next: r.nextPageToken ?? "" };
    },
  },
  advisories: {
    rest: ["/vulnerabilities/v2beta1/advisories", "advisories"],
    rpc: async (t, req) => {
      const r = await createClient(AdvisoriesService, t).listAdvisories(req);
      return { items: r.advisories, next: r.nextPageToken ?? "" };
    },
  },
} satisfies Record<string, Lister>;

async function listPage(
  ts: TestServer,
  org: TestOrg,
  over: Wire,
  list: Lister,
  q: { childrenOf: string; orderBy: string; pageSize: number; pageToken?: string },
  /** The item's JSON (REST) or message (RPC) property that holds the sort value. */
  prop: { json: string; message: string },
): Promise<Page> {
  if (over === "rest") {
    const params = new URLSearchParams({
      "uidp.childrenOf": q.childrenOf,
      orderBy: q.orderBy,
      pageSize: String(q.pageSize),
      ...(q.pageToken ? { pageToken: q.pageToken } : {}),
    });
    const r = await restCall(
      ts.url,
      "GET",
      `${list.rest[0]}?${params}`,
      undefined,
      org.owner.headers,
    );
    if (r.status !== 200) {
      return {
        ok: false,
        code: r.json.code,
        fields: badRequestFields(r.json),
        message: r.json.message,
      };
    }
    const items = (r.json[list.rest[1]] ?? []) as Record<string, unknown>[];
    return {
      ok: true,
      items: items.map((i) => ({ uid: i.uid as string, value: i[prop.json] })),
      next: r.json.nextPageToken ?? "",
    };
  }
  try {
    const r = await list.rpc(connectTransports(ts.url, org.owner.headers)[over], {
      uidp: { descendantsOf: "", childrenOf: q.childrenOf },
      orderBy: q.orderBy,
      pageSize: q.pageSize,
      pageToken: q.pageToken ?? "",
    });
    return {
      ok: true,
      items: r.items.map((i) => ({
        uid: (i as { uid: string }).uid,
        value: (i as Record<string, unknown>)[prop.message],
      })),
      next: r.next,
    };
  } catch (e) {
    const err = connectErr(e);
    return { ok: false, code: err.code, fields: err.fields, message: err.message };
  }
}

/** Every page of a List, two at a time, following the tokens. */
async function walk(
  ...args: Parameters<typeof listPage> extends [
    infer A,
    infer B,
    infer C,
    infer D,
    infer Q,
    infer P,
  ]
    ? [A, B, C, D, Omit<Q & object, "pageSize" | "pageToken">, P]
    : never
): Promise<{ uid: string; value: unknown }[]> {
  const [ts, org, over, list, q, prop] = args;
  const out: { uid: string; value: unknown }[] = [];
  let pageToken = "";
  for (let i = 0; i < 20; i++) {
    const page = await listPage(ts, org, over, list, { ...q, pageSize: 2, pageToken }, prop);
    if (!page.ok) throw new Error(`${over}: ${page.message}`);
    out.push(...page.items);
    if (page.next === "") return out;
    pageToken = page.next;
  }
  throw new Error("more pages than items");
}

/** The order the List must give: by value, then uid, both ascending or both descending. */
function expected<T>(rows: { uid: string; value: T }[], desc: boolean): string[] {
  const cmp = (a: { uid: string; value: T }, b: { uid: string; value: T }) =>
    a.value < b.value ? -1 : a.value > b.value ? 1 : a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
  return [...rows].sort((a, b) => (desc ? -cmp(a, b) : cmp(a, b))).map((r) => r.uid);
}

describe.each(backends)("order_by on any sortable field, on %s", (backend: Backend) => {
  let ts: TestServer;
  let org: TestOrg;
  let team: string;
  const groups: { uid: string; value: string }[] = [];
  const repos: { uid: string; value: boolean }[] = [];
  const advisories: { uid: string; value: string }[] = [];

  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    org = await ts.makeOrg("order");
    team = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: team,
      parentUid: org.uid,
      name: "team",
      description: "",
      now: 1,
    });
    // Ties on purpose: the uid breaks them, across page boundaries too.
    const descriptions = ["zeta", "alpha", "mu", "alpha", "beta", "", "alpha"];
    for (const [i, description] of descriptions.entries()) {
      const uid = newChildUid(team);
      await ts.store.createGroup({ uid, parentUid: team, name: `g${i}`, description, now: 2 + i });
      groups.push({ uid, value: description });
    }
    for (const [i, isPublic] of [true, false, true, false, false].entries()) {
      const uid = newChildUid(team);
      await ts.store.createRepo({
        uid,
        groupUid: team,
        name: `r${i}`,
        description: "",
        aliases: [],
        public: isPublic,
        now: 1,
      });
      repos.push({ uid, value: isPublic });
    }
    for (const id of ["GHSA-2", "CVE-2024-9", "CVE-2024-10", "GHSA-1", "CGA-x"]) {
      const uid = newChildUid(team);
      await ts.store.createAdvisory(
        uid,
        team,
        {
          advisoryId: id,
          aliases: [],
          summary: "",
          artifactName: "a",
          componentName: "c",
          componentType: "apk",
          severities: [],
          events: [],
        },
        1,
      );
      advisories.push({ uid, value: id });
    }
  });
  afterAll(async () => {
    await ts?.close();
  });

  describe.each(wires)("over %s", (over) => {
    it.each([false, true])(
      "orders groups by description (desc: %s), page by page",
      async (desc) => {
        const got = await walk(
          ts,
          org,
          over,
          lists.groups,
          { childrenOf: team, orderBy: desc ? "description desc" : "description" },
          { json: "description", message: "description" },
        );
        expect(got.map((g) => g.uid)).toEqual(expected(groups, desc));
      },
    );

    it("orders advisories by advisory_id (or its JSON name) and repos by a boolean", async () => {
      for (const orderBy of ["advisory_id", "advisoryId DESC"]) {
        const got = await walk(
          ts,
          org,
          over,
          lists.advisories,
          { childrenOf: team, orderBy },
          {
            json: "advisoryId",
            message: "advisoryId",
          },
        );
        expect(got.map((a) => a.uid)).toEqual(expected(advisories, orderBy.endsWith("DESC")));
      }
      const got = await walk(
        ts,
        org,
        over,
        lists.repos,
        { childrenOf: team, orderBy: "public desc" },
        {
          json: "public",
          message: "public",
        },
      );
      const numeric = repos.map((r) => ({ uid: r.uid, value: r.value ? 1 : 0 }));
      expect(got.map((r) => r.uid)).toEqual(expected(numeric, true));
    });

    it("a field that is not sortable is INVALID_ARGUMENT naming the sortable ones", async () => {
      const prop = { json: "uid", message: "uid" };
      for (const [list, orderBy] of [
        [lists.groups, "resource_limits"], // a map
        [lists.groups, "nosuchfield"],
        [lists.groups, "description sideways"],
        [lists.identities, "email"], // not every reader is shown it
        [lists.identities, "claim_match"], // a message
        [lists.repos, "aliases"], // a list
      ] as const) {
        const page = await listPage(
          ts,
          org,
          over,
          list,
          { childrenOf: team, orderBy, pageSize: 2 },
          prop,
        );
        expect(page, orderBy).toMatchObject({ ok: false, code: 3, fields: ["order_by"] });
        if (!page.ok && list === lists.groups) {
          expect(page.message).toMatch(
            /name, create_time, update_time, uid, description, verified/,
          );
        }
      }
    });

    it("a page token is bound to its order_by: another one with it is refused", async () => {
      const prop = { json: "uid", message: "uid" };
      const q = { childrenOf: team, pageSize: 2 };
      const first = await listPage(
        ts,
        org,
        over,
        lists.groups,
        { ...q, orderBy: "description" },
        prop,
      );
      if (!first.ok) throw new Error(first.message);
      for (const orderBy of ["name", "description desc", "verified"]) {
        const page = await listPage(
          ts,
          org,
          over,
          lists.groups,
          { ...q, orderBy, pageToken: first.next },
          prop,
        );
        expect(page, orderBy).toMatchObject({ ok: false, code: 3, fields: ["page_token"] });
      }
    });
  });
});
