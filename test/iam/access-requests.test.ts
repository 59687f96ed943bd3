import { Code, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AccessRequest_State,
  AccessRequestsService,
} from "../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { createRequestExpirySweep } from "../../src/grants/request-expiry-sweep.js";
import { newChildUid } from "../../src/uid.js";
import { connectErr, grpcErr, grpcMetadata } from "../helpers/groups-clients.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import {
  backends,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

const editor = builtinRoles.find((r) => r.name === "editor")!;
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const hour = 3_600_000;
const day = 24 * hour;

/** An access request as every protocol's answer is compared: the fields a test reads. */
interface Req {
  uid: string;
  state: string;
  requesterUid: string;
  reviewerUid: string;
  reviewReason: string;
  roleBindingUid: string;
  /** ms since the epoch; 0 when absent. */
  expirationTime: number;
  grantExpireTime: number;
}

/** The calls of the AccessRequestsService, over one protocol, as one caller. */
interface Api {
  create(parent: string, roleUid: string, durationS: number, reason: string): Promise<Req>;
  get(uid: string): Promise<Req>;
  list(state?: string): Promise<Req[]>;
  approve(uid: string, reason?: string): Promise<Req>;
  deny(uid: string, reason?: string): Promise<Req>;
}

const protocols = ["connect", "grpc", "grpc-js", "rest"] as const;
type Protocol = (typeof protocols)[number];

const tsMs = (t: { seconds: bigint | string | number; nanos?: number } | undefined | null) =>
  t ? Number(t.seconds) * 1000 + Math.trunc((t.nanos ?? 0) / 1e6) : 0;
const restMs = (t: string | undefined) => (t ? Date.parse(t) : 0);

function fromMessage(m: Json, stateName: (s: Json) => string, ms: (t: Json) => number): Req {
  return {
    uid: m.uid,
    state: stateName(m.state),
    requesterUid: m.requester?.uid ?? "",
    reviewerUid: m.reviewerUid ?? "",
    reviewReason: m.reviewReason ?? "",
    roleBindingUid: m.roleBindingUid ?? "",
    expirationTime: ms(m.expirationTime),
    grantExpireTime: ms(m.grantExpireTime),
  };
}

/** The API over `protocol` for the caller whose headers are given; errors carry `.code`. */
function apiOf(ts: TestServer, protocol: Protocol, headers: Record<string, string>): Api {
  if (protocol === "rest") {
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await restCall(ts.url, method, path, body, headers);
      if (r.status !== 200) throw { code: restCode(r.json), status: r.status, json: r.json };
      return r.json;
    };
    const of = (j: Json) => fromMessage(j, (s) => s ?? "STATE_UNSPECIFIED", restMs);
    return {
      create: async (parent, roleUid, s, reason) =>
        of(
          await call("POST", `/iam/v2beta1/accessRequests/${parent}`, {
            roleUid,
            duration: `${s}s`,
            reason,
          }),
        ),
      get: async (uid) => of(await call("GET", `/iam/v2beta1/accessRequests/${uid}`)),
      list: async (state) =>
        (
          await call(
            "GET",
            `/iam/v2beta1/accessRequests?pageSize=200${state ? `&state=${state}` : ""}`,
          )
        ).accessRequests.map(of),
      approve: async (uid, reason = "") =>
        of(await call("POST", `/iam/v2beta1/accessRequests/${uid}:approve`, { reason })),
      deny: async (uid, reason = "") =>
        of(await call("POST", `/iam/v2beta1/accessRequests/${uid}:deny`, { reason })),
    };
  }
  if (protocol === "grpc-js") {
    const def = protoLoader.loadSync("gatehouse/iam/v2beta1/access_requests.proto", {
      includeDirs: ["proto", "node_modules/google-proto-files"],
      longs: String,
      enums: String,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      gatehouse: { iam: { v2beta1: { AccessRequestsService: grpc.ServiceClientConstructor } } };
    };
    const client = new pkg.gatehouse.iam.v2beta1.AccessRequestsService(
      `127.0.0.1:${ts.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as Record<
      string,
      (r: unknown, md: grpc.Metadata, cb: (e: grpc.ServiceError | null, res: Json) => void) => void
    >;
    const call = (method: string, req: unknown) =>
      new Promise<Json>((resolve, reject) =>
        client[method]!.call(client, req, grpcMetadata(headers), (err, res) =>
          err ? reject(grpcErr(err)) : resolve(res),
        ),
      );
    const of = (m: Json) => fromMessage(m, (s) => s, tsMs);
    return {
      create: async (parent, roleUid, s, reason) =>
        of(
          await call("createAccessRequest", {
            parent,
            accessRequest: { roleUid, duration: { seconds: String(s) }, reason },
          }),
        ),
      get: async (uid) => of(await call("getAccessRequest", { uid })),
      list: async (state) =>
        (
          await call("listAccessRequests", { pageSize: 200, ...(state ? { state } : {}) })
        ).accessRequests.map(of),
      approve: async (uid, reason = "") => of(await call("approveAccessRequest", { uid, reason })),
      deny: async (uid, reason = "") => of(await call("denyAccessRequest", { uid, reason })),
    };
  }
  const c = createClient(AccessRequestsService, transportFor(protocol, ts.url, headers));
  const of = (m: Json) => fromMessage(m, (s) => AccessRequest_State[s as number]!, tsMs);
  const wrap = async <T>(p: Promise<T>) => {
    try {
      return await p;
    } catch (e) {
      throw connectErr(e);
    }
  };
  return {
    create: async (parent, roleUid, s, reason) =>
      of(
        await wrap(
          c.createAccessRequest({
            parent,
            accessRequest: { roleUid, duration: { seconds: BigInt(s) }, reason },
          }),
        ),
      ),
    get: async (uid) => of(await wrap(c.getAccessRequest({ uid }))),
    list: async (state) =>
      (
        await wrap(
          c.listAccessRequests({
            pageSize: 200,
            ...(state
              ? { state: AccessRequest_State[state as keyof typeof AccessRequest_State] }
              : {}),
          }),
        )
      ).accessRequests.map(of),
    approve: async (uid, reason = "") => of(await wrap(c.approveAccessRequest({ uid, reason }))),
    deny: async (uid, reason = "") => of(await wrap(c.denyAccessRequest({ uid, reason }))),
  };
}

const restCodes: Record<string, number> = {
  INVALID_ARGUMENT: Code.InvalidArgument,
  NOT_FOUND: Code.NotFound,
  PERMISSION_DENIED: Code.PermissionDenied,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  UNAUTHENTICATED: Code.Unauthenticated,
};
function restCode(json: Json): number {
  const c = json?.code;
  if (typeof c === "number") return c;
  return restCodes[String(json?.status ?? c)] ?? -1;
}

/** The gRPC code `p` fails with (it must fail). */
async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    return (e as { code: number }).code;
  }
  throw new Error("expected the call to fail");
}

describe.each(backends)("access requests on %s", (backend) => {
  let ts: TestServer;
  let org: TestOrg;
  /** A workload of the group with the viewer role: it asks. */
  let requester: TestCaller;
  /** May bind roles at the organization, but holds none of the editor's writes. */
  let binder: TestCaller;
  const clock = { skew: 0 };

  beforeAll(async () => {
    ts = await startTestServer({}, { backend, now: () => Date.now() + clock.skew });
    org = await ts.makeOrg("asking");
    const owner = iamClients(transportFor("connect", ts.url, org.owner.headers));
    const binderRole = await owner.roles.createRole({
      parent: org.uid,
      role: { name: "binder", capabilities: ["role_bindings.create", "groups.list"] },
    });
    binder = await ts.makeIdentity(org.uid, [binderRole.uid]);
  });
  afterAll(async () => {
    await ts?.close();
  });

  /** The bindings of `identity` with `role` (the editor) at `group`, straight from the store. */
  async function bindingsOf(identity: string, group: string, role = editor.uid) {
    return (
      await ts.store.listRoleBindings({
        filters: { identity, group, role },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 200,
      })
    ).items;
  }

  async function typesOf(subject: string): Promise<string[]> {
    const page = await ts.store.listEvents({
      descendantsOf: subject,
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 200,
    } as never);
    return page.items.map((e) => (e as { type: string }).type);
  }

  describe.each(protocols)("over %s", (protocol) => {
    let group: string;
    let asker: Api;
    let owner: Api;
    let weak: Api;
    beforeAll(async () => {
      const c = iamClients(transportFor("connect", ts.url, org.owner.headers));
      group = (await c.groups.createGroup({ parent: org.uid, group: { name: `g-${protocol}` } }))
        .uid;
      requester = await ts.makeIdentity(group, ["viewer"]);
      asker = apiOf(ts, protocol, requester.headers);
      owner = apiOf(ts, protocol, org.owner.headers);
      weak = apiOf(ts, protocol, binder.headers);
    });

    it("asks, lists as pending, and an approval binds the requester until the duration ends", async () => {
      const before = Date.now();
      const made = await asker.create(group, editor.uid, 8 * 3600, "deploy the hotfix");
      expect(made.state).toBe("PENDING");
      expect(made.requesterUid).toBe(requester.uid);
      expect(made.uid.startsWith(`${group}/`)).toBe(true);
      expect(made.expirationTime).toBeGreaterThanOrEqual(before + 7 * day - 1000);
      expect(made.expirationTime).toBeLessThanOrEqual(Date.now() + 7 * day + 1000);
      // The requester sees its own request, without any right to answer it.
      expect((await asker.get(made.uid)).state).toBe("PENDING");
      expect(await codeOf(asker.approve(made.uid))).toBe(Code.PermissionDenied);
      // Someone who may bind roles sees it pending, but may not grant the editor's writes.
      expect((await weak.list("PENDING")).map((r) => r.uid)).toContain(made.uid);
      expect(await codeOf(weak.approve(made.uid))).toBe(Code.PermissionDenied);
      expect(await codeOf(weak.deny(made.uid))).toBe(Code.PermissionDenied);
      expect(await bindingsOf(requester.uid, group)).toHaveLength(0);

      const t = Date.now();
      const approved = await owner.approve(made.uid, "ok for today");
      expect(approved.state).toBe("APPROVED");
      expect(approved.reviewerUid).toBe(org.owner.uid);
      expect(approved.reviewReason).toBe("ok for today");
      const bound = await bindingsOf(requester.uid, group);
      expect(bound.map((b) => [b.uid, b.roleUid])).toEqual([[approved.roleBindingUid, editor.uid]]);
      expect(bound[0]!.expireTime).toBe(approved.grantExpireTime);
      expect(approved.grantExpireTime).toBeGreaterThanOrEqual(t + 8 * hour - 1000);
      expect(approved.grantExpireTime).toBeLessThanOrEqual(Date.now() + 8 * hour + 1000);
      // Answered once: neither a second approval nor a denial changes it.
      expect(await codeOf(owner.approve(made.uid))).toBe(Code.FailedPrecondition);
      expect(await codeOf(owner.deny(made.uid))).toBe(Code.FailedPrecondition);
      expect((await owner.list("PENDING")).map((r) => r.uid)).not.toContain(made.uid);
      expect((await owner.list("APPROVED")).map((r) => r.uid)).toContain(made.uid);
      expect(await typesOf(made.uid)).toEqual([
        "dev.gatehouse.iam.access_request.created.v1",
        "dev.gatehouse.iam.access_request.approved.v1",
      ]);
      await ts.store.deleteRoleBinding(approved.roleBindingUid);
    });

    it("denies with a reason, and binds nothing", async () => {
      const made = await asker.create(group, editor.uid, 3600, "read the logs");
      const denied = await owner.deny(made.uid, "ask your lead");
      expect(denied).toMatchObject({ state: "DENIED", reviewReason: "ask your lead" });
      expect(denied.roleBindingUid).toBe("");
      expect((await asker.get(made.uid)).state).toBe("DENIED");
      expect(await codeOf(owner.approve(made.uid))).toBe(Code.FailedPrecondition);
      expect(await bindingsOf(requester.uid, group)).toHaveLength(0);
      expect(await typesOf(made.uid)).toEqual([
        "dev.gatehouse.iam.access_request.created.v1",
        "dev.gatehouse.iam.access_request.denied.v1",
      ]);
    });

    it("never lets anyone answer their own request", async () => {
      const mine = await owner.create(group, editor.uid, 3600, "my own");
      expect(await codeOf(owner.approve(mine.uid))).toBe(Code.PermissionDenied);
      expect(await codeOf(owner.deny(mine.uid))).toBe(Code.PermissionDenied);
      expect((await owner.get(mine.uid)).state).toBe("PENDING");
      expect(await bindingsOf(org.owner.uid, group)).toHaveLength(0);
    });

    it("refuses a request without a reason or for longer than 366 days", async () => {
      expect(await codeOf(asker.create(group, editor.uid, 3600, " "))).toBe(Code.InvalidArgument);
      expect(await codeOf(asker.create(group, editor.uid, 367 * 86_400, "long"))).toBe(
        Code.InvalidArgument,
      );
      expect(await codeOf(asker.create(group, editor.uid, 0, "none"))).toBe(Code.InvalidArgument);
    });

    it("lets a request nobody answered lapse: shown expired, no longer approvable", async () => {
      const t = Date.now();
      const made = await ts.store.createAccessRequest({
        uid: newChildUid(group),
        groupUid: group,
        roleUid: editor.uid,
        requesterUid: requester.uid,
        durationMs: hour,
        reason: "old",
        expirationTime: t + 60_000,
        now: t,
      });
      expect((await owner.get(made.uid)).state).toBe("PENDING");
      clock.skew = 2 * 60_000;
      try {
        expect((await owner.get(made.uid)).state).toBe("EXPIRED");
        expect((await owner.list("EXPIRED")).map((r) => r.uid)).toContain(made.uid);
        expect((await owner.list("PENDING")).map((r) => r.uid)).not.toContain(made.uid);
        expect(await codeOf(owner.approve(made.uid))).toBe(Code.FailedPrecondition);
        // The sweep (each server runs it every second too) records the lapse once.
        await createRequestExpirySweep({
          store: ts.store,
          now: () => Date.now() + clock.skew,
        }).run();
        expect(await typesOf(made.uid)).toEqual(["dev.gatehouse.iam.access_request.expired.v1"]);
        expect((await owner.get(made.uid)).state).toBe("EXPIRED");
      } finally {
        clock.skew = 0;
      }
      expect(await bindingsOf(requester.uid, group)).toHaveLength(0);
    });

    it("shows a request to no one outside its group's granters and requester", async () => {
      const made = await asker.create(group, viewer.uid, 3600, "peek");
      const other = await ts.makeOrg("outside");
      const outsider = apiOf(ts, protocol, other.owner.headers);
      expect(await codeOf(outsider.get(made.uid))).toBe(Code.PermissionDenied);
      expect(await codeOf(outsider.get(`${group}/0000000000000000`))).toBe(Code.PermissionDenied);
      expect(await codeOf(outsider.approve(made.uid))).toBe(Code.PermissionDenied);
      expect((await outsider.list()).map((r) => r.uid)).not.toContain(made.uid);
      expect(await codeOf(outsider.create(group, viewer.uid, 3600, "let me in"))).toBe(
        Code.PermissionDenied,
      );
    });
  });
});
