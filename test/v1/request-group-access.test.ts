import { createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v1/groups_pb.js";
import {
  type AccessRequest,
  AccessRequest_State,
} from "../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { connectErr, connectTransports, grpcErr, grpcMetadata } from "../helpers/groups-clients.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  type TestCaller,
  type TestOrg,
  useTestServer,
} from "../helpers/test-server.js";

// v1 RequestGroupAccess over REST (fetch), Connect, gRPC (connect-node) and grpc-js, on SQLite
// and PostgreSQL: it is a v2beta1 access request (viewer, 8 h, "requested through v1") that an
// owner sees pending through v2beta1 and whose approval binds the requester.

const wires = ["rest", "connect", "grpc", "grpc-js"] as const;
type Wire = (typeof wires)[number];
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const hourMs = 3_600_000;

/** The outcome of one RequestGroupAccess: OK with v1's body, or the error's code and fields. */
type Reply = { ok: true; body: unknown } | { ok: false; code: number; fields: string[] };

const restCodes: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5 };

/** grpc-js with stubs loaded from proto/ (v1 groups), as a v1 gRPC client builds them. */
function grpcJsV1Groups(port: number) {
  const def = protoLoader.loadSync("gatehouse/iam/v1/groups.proto", {
    includeDirs: ["proto", "node_modules/google-proto-files"],
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    gatehouse: { iam: { v1: { GroupsService: grpc.ServiceClientConstructor } } };
  };
  return new pkg.gatehouse.iam.v1.GroupsService(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & {
    requestGroupAccess(
      req: { groupId: string },
      md: grpc.Metadata,
      cb: (err: grpc.ServiceError | null, res: unknown) => void,
    ): void;
  };
}

async function requestAccess(
  ts: { url: string; port: number },
  over: Wire,
  who: TestCaller | undefined,
  groupId: string,
): Promise<Reply> {
  const headers = who?.headers ?? {};
  if (over === "rest") {
    const r = await restCall(
      ts.url,
      "POST",
      `/iam/v1/groups/${groupId}:requestGroupAccess`,
      // v1's gateway ignored fields it did not know; so does ours (no role to smuggle in).
      { groupId, role: "owner" },
      headers,
    );
    if (r.status === 200) return { ok: true, body: r.json };
    return { ok: false, code: restCodes[r.status] ?? -r.status, fields: badRequestFields(r.json) };
  }
  if (over === "grpc-js") {
    const client = grpcJsV1Groups(ts.port);
    try {
      return await new Promise<Reply>((resolve) =>
        client.requestGroupAccess({ groupId }, grpcMetadata(headers), (err, res) => {
          if (!err) return resolve({ ok: true, body: res });
          const e = grpcErr(err);
          resolve({ ok: false, code: e.code, fields: e.fields });
        }),
      );
    } finally {
      client.close();
    }
  }
  try {
    await createClient(GroupsService, connectTransports(ts.url, headers)[over]).requestGroupAccess({
      groupId,
    });
    return { ok: true, body: {} };
  } catch (e) {
    const err = connectErr(e);
    return { ok: false, code: err.code, fields: err.fields };
  }
}

describe.each(backends)("v1 RequestGroupAccess on %s", (backend: Backend) => {
  const ts = useTestServer({}, { backend });
  let orgA: TestOrg;
  let orgB: TestOrg;
  /** Holds only groups.list at A: it may see A's groups, and asks to become a viewer. */
  let seer: TestCaller;

  beforeAll(async () => {
    orgA = await ts.makeOrg("asking-a");
    orgB = await ts.makeOrg("asking-b");
    const owner = iamClients(transportFor("connect", ts.url, orgA.owner.headers));
    const seerRole = await owner.roles.createRole({
      parent: orgA.uid,
      role: { name: "seer", capabilities: ["groups.list"] },
    });
    seer = await ts.makeIdentity(orgA.uid, [seerRole.uid]);
  });

  /** The v2 access requests at `group` that A's owner sees, in the state given. */
  async function requestsAt(group: string, state: AccessRequest_State): Promise<AccessRequest[]> {
    const owner = iamClients(transportFor("connect", ts.url, orgA.owner.headers));
    return (
      await owner.accessRequests.listAccessRequests({
        uidp: { descendantsOf: group, childrenOf: "" },
        state,
        pageSize: 200,
      })
    ).accessRequests;
  }

  /** The viewer bindings of the seer at `group`, straight from the store. */
  async function viewerBindingsAt(group: string) {
    return (
      await ts.store.listRoleBindings({
        filters: { identity: seer.uid, group, role: viewer.uid },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 200,
      })
    ).items;
  }

  describe.each(wires)("over %s", (over) => {
    let team: string;
    beforeAll(async () => {
      const owner = iamClients(transportFor("connect", ts.url, orgA.owner.headers));
      team = (await owner.groups.createGroup({ parent: orgA.uid, group: { name: `t-${over}` } }))
        .uid;
    });

    it("asks for the viewer role for 8 hours, pending in v2beta1 until an owner approves", async () => {
      const before = Date.now();
      expect(await requestAccess(ts, over, seer, team)).toEqual({ ok: true, body: {} });
      const pending = await requestsAt(team, AccessRequest_State.PENDING);
      expect(pending).toHaveLength(1);
      const made = pending[0]!;
      expect(made).toMatchObject({
        roleUid: viewer.uid,
        reason: "requested through v1",
        duration: { seconds: 8n * 3600n },
        requester: { uid: seer.uid },
        group: { uid: team },
      });
      expect(made.uid.startsWith(`${team}/`)).toBe(true);
      expect(await viewerBindingsAt(team)).toHaveLength(0);

      // An owner of A approves through v2beta1: the seer is now a viewer of the team for 8 h.
      const owner = iamClients(transportFor("connect", ts.url, orgA.owner.headers));
      const approved = await owner.accessRequests.approveAccessRequest({ uid: made.uid });
      expect(approved.state).toBe(AccessRequest_State.APPROVED);
      const bound = await viewerBindingsAt(team);
      expect(bound.map((b) => b.uid)).toEqual([approved.roleBindingUid]);
      expect(bound[0]!.expireTime).toBeGreaterThanOrEqual(before + 8 * hourMs - 1000);
      expect(bound[0]!.expireTime).toBeLessThanOrEqual(Date.now() + 8 * hourMs + 1000);
      expect(await requestsAt(team, AccessRequest_State.PENDING)).toHaveLength(0);
    });

    it("refuses another organization, no token and a missing group id, and asks nothing", async () => {
      // B's owner cannot see A's team: the v2 rule's PERMISSION_DENIED, and no request made.
      expect(await requestAccess(ts, over, orgB.owner, team)).toMatchObject({
        ok: false,
        code: 7,
      });
      expect(await requestAccess(ts, over, undefined, team)).toMatchObject({
        ok: false,
        code: 16,
      });
      const all = await requestsAt(team, AccessRequest_State.STATE_UNSPECIFIED);
      expect(all.filter((r) => r.requester?.uid !== seer.uid)).toEqual([]);
      if (over !== "rest") {
        // (REST has no route without a group id in the path.)
        expect(await requestAccess(ts, over, seer, "")).toEqual({
          ok: false,
          code: 3,
          fields: ["groupId"],
        });
      }
    });
  });
});
