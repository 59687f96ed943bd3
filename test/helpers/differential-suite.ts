import type { DescMethod, JsonObject } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compare, logMismatches, type Mismatch } from "./differential-compare.js";
import {
  type DifferentialPair,
  pathOf,
  type RawAnswer,
  type RawRequest,
  startDifferentialPair,
} from "./differential-pair.js";
import {
  authHeaders,
  type Callers,
  casesFor,
  contentTypes,
  type DiffCase,
  encode,
  firstListed,
  readsOnly,
  type WireProtocol,
  wireProtocols,
} from "./differential-requests.js";
import type { Backend } from "./test-server.js";

// The differential suite: the lean paths (src/grpc/unary-grpc.ts, unary-connect.ts) against the
// Connect router, over every unary method the server serves, as the server itself lists them
// (the list the fail-closed check runs on). Nothing here names a method: a new RPC is
// compared as soon as it is served. Both servers share one store, so a read answers the same
// bytes on both; writes are only sent where they are refused (see differential-requests.ts).

/**
 * Methods that cannot be compared, with the reason. The suite fails when one is no longer
 * served (the entry is stale) or when it answers the same on both paths after all.
 */
export const unexercised: Readonly<Record<string, string>> = {};

/** The request of one generated call on one protocol. */
export function wireRequest(
  method: DescMethod,
  protocol: WireProtocol,
  headers: Record<string, string | string[]>,
  body: Uint8Array,
): RawRequest {
  const base: Record<string, string> =
    protocol === "grpc"
      ? { "content-type": contentTypes.grpc, te: "trailers" }
      : { "content-type": contentTypes[protocol] };
  return { path: `/${rpcOf(method)}`, headers: { ...base, ...headers }, body };
}

/** `package.Service/Method`. */
export const rpcOf = (m: DescMethod) => `${m.parent.typeName}/${m.name}`;

/** The state a differential suite runs on. */
export interface DifferentialState {
  pair: DifferentialPair;
  callers: Callers;
  /** Every unary method the server serves. */
  methods: DescMethod[];
  /** Which path ran each call that reached the interceptors, by request id, on each server. */
  servedBy: { lean: Map<string, string>; router: Map<string, string> };
  /** A request id no call has used yet. */
  nextId(): string;
}

/**
 * Start a pair on `backend`, make two organizations and some resources of every kind in the
 * first (so that reads answer with something), and return the state; closed after the file.
 */
export function useDifferentialPair(backend: Backend): () => DifferentialState {
  let state: DifferentialState | undefined;
  const servedBy = { lean: new Map<string, string>(), router: new Map<string, string>() };
  const spy =
    (seen: Map<string, string>): Interceptor =>
    (next) =>
    (req) => {
      const id = req.header.get("x-request-id");
      if (id) {
        // Deep enough to reach the frame below the interceptor chain.
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 50;
        const stack = new Error().stack ?? "";
        Error.stackTraceLimit = limit;
        seen.set(id, pathOf(stack) ?? `unknown ${stack}`);
      }
      return next(req);
    };
  let ids = 0;
  // The servers' clock, injected: seed() makes resources on whole seconds (a time protobuf-es
  // alone writes without a fraction, `...:00Z`) and on fractional ones, on purpose, so that
  // every run compares both forms on every path and encoding.
  const clock = { t: Math.floor(Date.now() / 1000) * 1000 };
  beforeAll(async () => {
    const pair = await startDifferentialPair(
      backend,
      { lean: spy(servedBy.lean), router: spy(servedBy.router) },
      () => clock.t,
    );
    const a = await pair.lean.makeOrg("differential");
    const b = await pair.lean.makeOrg("elsewhere");
    const callers: Callers = {
      orgUid: a.uid,
      owner: a.owner,
      other: b.owner,
    };
    await seed(pair, callers, clock);
    const methods = pair.lean.server.served.filter((m) => m.methodKind === "unary");
    state = { pair, callers, methods, servedBy, nextId: () => `diff-${++ids}` };
  }, 60_000);
  afterAll(async () => {
    await state?.pair.close();
  });
  return () => {
    if (!state) throw new Error("the differential pair did not start");
    return state;
  };
}

/** A Connect JSON call to the lean server that must succeed: its answer. */
async function callLean(
  pair: DifferentialPair,
  rpc: string,
  headers: Record<string, string>,
  json: JsonObject,
): Promise<JsonObject> {
  const res = await fetch(`${pair.lean.url}/${rpc}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(json),
  });
  const body = (await res.json()) as JsonObject;
  if (res.status !== 200) throw new Error(`seeding ${rpc}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * Something of each kind in the organization, made through the API (so that it also leaves
 * events in the audit trail): a group, a custom role, a workload identity bound to it, an
 * identity provider, an account association, an invite, a repo with a tag, an advisory.
 */
async function seed(pair: DifferentialPair, callers: Callers, clock: { t: number }): Promise<void> {
  const org = callers.orgUid;
  const owner = callers.owner.headers;
  // Each call a step on: whole seconds and times with milliseconds, in turn.
  const base = clock.t;
  let step = 0;
  const call = (...a: Parameters<typeof callLean>) => {
    step++;
    clock.t = base + step * 1000 + (step % 2 === 0 ? 0 : 250);
    return callLean(...a);
  };
  const iam = "gatehouse.iam.v2beta1";
  const group = await call(pair, `${iam}.GroupsService/CreateGroup`, owner, {
    parent: org,
    group: { name: "team", description: "a group to read" },
  });
  const role = await call(pair, `${iam}.RolesService/CreateRole`, owner, {
    parent: org,
    role: { name: "reader", capabilities: ["groups.list"] },
  });
  // A workload bound to the custom role in the team, and one that may write advisories.
  await pair.lean.makeIdentity(group.uid as string, [role.uid as string]);
  const advisor = await pair.lean.makeIdentity(org, ["advisories.admin"]);
  await call(pair, `${iam}.IdentityProvidersService/CreateIdentityProvider`, owner, {
    parent: org,
    identityProvider: {
      name: "corp",
      oidc: { issuer: "https://login.example.com", clientId: "gatehouse", clientSecret: "s3cret" },
    },
  });
  await call(pair, `${iam}.AccountAssociationsService/CreateAccountAssociation`, owner, {
    parent: org,
    accountAssociation: { name: "prod", amazon: { account: "123456789012" } },
  });
  await call(pair, `${iam}.GroupInvitesService/CreateGroupInvite`, owner, {
    parent: group.uid as string,
    groupInvite: { roleUid: role.uid as string },
  });
  const repo = await call(pair, "gatehouse.registry.v2beta1.ReposService/CreateRepo", owner, {
    parent: org,
    repo: { name: "app" },
  });
  await call(pair, "gatehouse.registry.v2beta1.TagsService/CreateTag", owner, {
    parent: repo.uid as string,
    tag: { name: "v1", digest: `sha256:${"a".repeat(64)}` },
  });
  await call(
    pair,
    "gatehouse.vulnerabilities.v2beta1.AdvisoriesService/CreateAdvisory",
    advisor.headers,
    {
      parent: org,
      advisory: { advisoryId: "GHSA-diff-0001", summary: "a test advisory" },
    },
  );
}

/**
 * For a method that reads one resource by `uid` (or v1's `id`): a request naming one that
 * exists, found by listing its service's resources through the router as the owner.
 */
async function foundRequest(
  state: DifferentialState,
  method: DescMethod,
): Promise<JsonObject | undefined> {
  const key = method.input.fields.find((f) => f.name === "uid" || f.name === "id");
  if (!key || !readsOnly(method)) return undefined;
  // A List by id (v1) lists its own kind; a Get, the kind of its service's List.
  const isList = (m: DescMethod) =>
    m.methodKind === "unary" && m.name.startsWith("List") && readsOnly(m);
  const list = isList(method) ? method : method.parent.methods.find(isList);
  if (!list) return undefined;
  const res = await fetch(`${state.pair.routerUrl}/${rpcOf(list)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...state.callers.owner.headers },
    body: "{}",
  });
  const first = firstListed(await res.json());
  return first ? { [key.jsonName]: first.value } : undefined;
}

/**
 * The table-driven comparison: for every served unary method, every generated case, on each
 * protocol, the lean server and the router server answer alike; the answers seen include
 * successes and validation errors, not only refusals.
 */
export function describeEveryMethod(state: () => DifferentialState): void {
  it("covers every served unary method; the list of exceptions is not stale", () => {
    const { methods } = state();
    const served = new Set(methods.map(rpcOf));
    // As the fail-closed check counts them: the API is more than a handful of methods.
    expect(served.size).toBeGreaterThan(50);
    for (const rpc of Object.keys(unexercised)) expect(served, rpc).toContain(rpc);
  });

  // A resource of each reading method's service, found once for the three protocols.
  const found = new Map<DescMethod, Promise<JsonObject | undefined>>();
  const foundOnce = (s: DifferentialState, m: DescMethod) => {
    if (!found.has(m)) found.set(m, foundRequest(s, m));
    return found.get(m)!;
  };

  describe.each(wireProtocols)("over %s", (protocol) => {
    it("every served unary method answers alike on both paths", async () => {
      const s = state();
      const mismatches: Mismatch[] = [];
      const seen = new Map<string, number>();
      // The listed methods that still cannot be compared.
      const stillUnexercised = new Set<string>();
      let leanRan = 0;
      // The label of each call, by its request id, for comparing the log lines.
      const labels = new Map<string, string>();
      const calls: { method: DescMethod; c: DiffCase }[] = [];
      for (const method of s.methods) {
        for (const c of casesFor(method, s.callers, await foundOnce(s, method))) {
          calls.push({ method, c });
        }
      }
      const run = async ({ method, c }: (typeof calls)[number], k: number) => {
        const rpc = rpcOf(method);
        // Every other Connect call accepts gzip: a list's answer (over 1 KiB) then goes out
        // compressed, whole-second times and all (seed()).
        const gzip = protocol !== "grpc" && k % 2 === 1;
        const label = `${rpc} ${protocol}${gzip ? " gzip" : ""} ${c.label}`;
        const id = s.nextId();
        const req = wireRequest(
          method,
          protocol,
          {
            ...authHeaders(c.auth, s.callers),
            "x-request-id": id,
            ...(gzip ? { "accept-encoding": "gzip" } : {}),
          },
          encode(method, c.json, protocol),
        );
        const { lean, mismatch } = await compare(s.pair, protocol, req, label);
        if (rpc in unexercised) {
          if (mismatch) stillUnexercised.add(rpc);
          return;
        }
        labels.set(id, label);
        if (mismatch) mismatches.push(mismatch);
        expect(lean.headers["x-request-id"], label).toBe(id);
        // Each server ran the call its own way, if it got as far as the interceptors.
        if (s.servedBy.router.has(id)) {
          expect([label, s.servedBy.lean.get(id), s.servedBy.router.get(id)]).toEqual([
            label,
            "lean",
            "router",
          ]);
          leanRan++;
        }
        const outcome = outcomeOf(protocol, lean);
        seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      };
      // A few calls at a time: none of them changes the store, so their order does not matter.
      for (let i = 0; i < calls.length; i += 4) {
        await Promise.all(calls.slice(i, i + 4).map((call, j) => run(call, i + j)));
      }
      // Each path wrote the same request log line for each call.
      mismatches.push(...(await logMismatches(s.pair, labels)));
      expect(mismatches).toEqual([]);
      // The comparison is not of the router with itself: calls ran on the lean path.
      expect(leanRan).toBeGreaterThan(s.methods.length);
      for (const rpc of Object.keys(unexercised)) {
        expect(stillUnexercised, `${rpc} compares now: delete it from the list`).toContain(rpc);
      }
      // More than refusals were compared: answers that succeeded, and that failed validation.
      expect([...seen.keys()]).toEqual(expect.arrayContaining([ok(protocol), invalid(protocol)]));
    }, 180_000);
  });
}

/** An answer's outcome as `http/grpc-status` (gRPC) or `http` (Connect). */
function outcomeOf(protocol: WireProtocol, a: RawAnswer): string {
  if (protocol !== "grpc") return String(a.status);
  return `${a.status}/${a.trailers["grpc-status"] ?? a.headers["grpc-status"]}`;
}
const ok = (p: WireProtocol) => (p === "grpc" ? "200/0" : "200");
const invalid = (p: WireProtocol) => (p === "grpc" ? "200/3" : "400");
