import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { AccessService } from "../../gen/gatehouse/iam/v2beta1/access_pb.js";
import { CallerService } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { connectTransports } from "../helpers/groups-clients.js";
import { failure, iamClients, transportFor } from "../helpers/iam-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import { backends, type TestOrg, useTestServer } from "../helpers/test-server.js";

// Role bindings that expire: past expireTime a binding grants nothing, on every protocol, at
// once (the access answers compare each grant's expiry with the clock, cached or not); the
// sweep then removes it and records one `expired` event. The server's and the store's clock is
// injected: the tests move it, and never wait on the wall clock for an expiry.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
const minute = 60_000;
const expiredType = "dev.gatehouse.iam.role_binding.expired.v1";

describe.each(backends)("expiring role bindings on %s", (backend) => {
  const clock = { t: Date.now() };
  const ts = useTestServer({}, { backend, now: () => clock.t });
  let org: TestOrg;
  beforeAll(async () => {
    org = await ts.makeOrg(`expiry-${backend}`);
  });
  const owner = () => iamClients(transportFor("connect", ts.url, org.owner.headers));
  const events = () =>
    createClient(EventsService, transportFor("connect", ts.url, org.owner.headers));

  /** Poll the owner's events about `subject` until `until` holds (the sweep runs each second). */
  async function eventsAbout(subject: string, until: (types: string[]) => boolean) {
    for (;;) {
      const res = await events().listEvents({ uidp: { childrenOf: subject, descendantsOf: "" } });
      const types = res.events.map((e) => e.type);
      if (until(types)) return res.events;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("grants until expireTime, then nothing on any protocol, even from a warm cache", async () => {
    const group = (await owner().groups.createGroup({ parent: org.uid, group: { name: "g1" } }))
      .uid;
    const worker = await ts.makeIdentity(group);
    const expireMs = clock.t + 10 * minute;
    const binding = await owner().roleBindings.createRoleBinding({
      parent: group,
      roleBinding: {
        identityUid: worker.uid,
        roleUid: viewer.uid,
        expireTime: timestampFromMs(expireMs),
      },
    });
    expect(timestampDate(binding.expireTime!).getTime()).toBe(expireMs);
    const listed = await owner().roleBindings.listRoleBindings({ identity: worker.uid });
    expect(
      listed.roleBindings.map((b) => b.expireTime && timestampDate(b.expireTime).getTime()),
    ).toEqual([expireMs]);
    // REST shows it as RFC 3339.
    const rest = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/roleBindings/${binding.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(rest.json.expireTime).toBe(new Date(expireMs).toISOString());

    // CheckAccess names the granting binding with its expiry.
    const access = createClient(AccessService, transportFor("connect", ts.url, org.owner.headers));
    const check = await access.checkAccess({
      identityUid: worker.uid,
      groupUid: group,
      capability: "groups.list",
    });
    expect(check.allowed).toBe(true);
    expect(check.grants.map((g) => g.roleBinding?.uid)).toEqual([binding.uid]);
    expect(timestampDate(check.grants[0]!.roleBinding!.expireTime!).getTime()).toBe(expireMs);

    const worksOn = connectTransports(ts.url, worker.headers);
    const getGroup = (t: keyof typeof worksOn) =>
      iamClients(worksOn[t]).groups.getGroup({ uid: group });
    const getRest = () =>
      restCall(ts.url, "GET", `/iam/v2beta1/groups/${group}`, undefined, worker.headers);
    // Asked twice each, so that the answers are cached before the expiry.
    for (const t of ["connect", "grpcWeb", "grpc"] as const) {
      expect((await getGroup(t)).uid).toBe(group);
      expect((await getGroup(t)).uid).toBe(group);
    }
    expect((await getRest()).status).toBe(200);

    // A millisecond before: still granted; at the expiry: nothing, whether swept or not.
    clock.t = expireMs - 1;
    expect((await getGroup("connect")).uid).toBe(group);
    clock.t = expireMs;
    for (const t of ["connect", "grpcWeb", "grpc"] as const) {
      expect(await failure(getGroup(t))).toMatchObject({ code: Code.PermissionDenied });
    }
    expect((await getRest()).status).toBe(403);
    const after = await access.checkAccess({
      identityUid: worker.uid,
      groupUid: group,
      capability: "groups.list",
    });
    expect(after.allowed).toBe(false);
    expect(after.grants).toEqual([]);
    expect(after.shortfalls).toEqual([]);

    // The sweep removes it and records its expiry once, naming the binding as it was.
    const seen = await eventsAbout(binding.uid, (types) => types.includes(expiredType));
    expect(seen.map((e) => e.type)).toEqual([
      "dev.gatehouse.iam.role_binding.created.v1",
      expiredType,
    ]);
    const expired = seen[1]!.data as Record<string, unknown>;
    expect(expired).toMatchObject({
      operator: "role binding expiry",
      roleBinding: { uid: binding.uid, role: { name: "viewer" }, identity: { uid: worker.uid } },
    });
    expect(await failure(owner().roleBindings.getRoleBinding({ uid: binding.uid }))).toMatchObject({
      code: Code.NotFound,
    });
  });

  it("an update sets, moves and clears the expiry; only a grantor may extend it", async () => {
    const group = (await owner().groups.createGroup({ parent: org.uid, group: { name: "g2" } }))
      .uid;
    const worker = await ts.makeIdentity(group);
    const b = await owner().roleBindings.createRoleBinding({
      parent: group,
      roleBinding: { identityUid: worker.uid, roleUid: viewer.uid },
    });
    expect(b.expireTime).toBeUndefined();
    const at = clock.t + 60 * minute;
    const set = await owner().roleBindings.updateRoleBinding({
      roleBinding: { uid: b.uid, expireTime: timestampFromMs(at) },
      updateMask: { paths: ["expire_time"] },
    });
    expect(timestampDate(set.expireTime!).getTime()).toBe(at);
    expect(set.role?.uid).toBe(viewer.uid);
    // Named in the mask with no value: until revoked again.
    const cleared = await owner().roleBindings.updateRoleBinding({
      roleBinding: { uid: b.uid },
      updateMask: { paths: ["expire_time"] },
    });
    expect(cleared.expireTime).toBeUndefined();

    // A binder who may update bindings but does not hold what the role grants cannot make
    // such a binding last longer: an expiry moved later is a grant, as a new role is.
    const binderRole = await owner().roles.createRole({
      parent: org.uid,
      role: {
        name: "binder",
        capabilities: ["role_bindings.update", "role_bindings.create", "role_bindings.list"],
      },
    });
    const strong = await owner().roleBindings.createRoleBinding({
      parent: group,
      roleBinding: {
        identityUid: worker.uid,
        roleUid: editor.uid,
        expireTime: timestampFromMs(clock.t + minute),
      },
    });
    const binder = await ts.makeIdentity(group, [binderRole.uid]);
    const viaBinder = iamClients(transportFor("connect", ts.url, binder.headers));
    for (const change of [{ expireTime: timestampFromMs(at) }, {}]) {
      expect(
        await failure(
          viaBinder.roleBindings.updateRoleBinding({
            roleBinding: { uid: strong.uid, ...change },
            updateMask: { paths: ["expire_time"] },
          }),
        ),
      ).toMatchObject({ code: Code.PermissionDenied });
    }
    const unchanged = await owner().roleBindings.getRoleBinding({ uid: strong.uid });
    expect(timestampDate(unchanged.expireTime!).getTime()).toBe(clock.t + minute);
  });

  it("a batch grants for a while too; GetCaller stops showing a binding at its expiry", async () => {
    const group = (await owner().groups.createGroup({ parent: org.uid, group: { name: "g3" } }))
      .uid;
    const worker = await ts.makeIdentity(group);
    const at = clock.t + 5 * minute;
    const made = await owner().roleBindings.batchCreateRoleBindings({
      parent: group,
      requests: [
        {
          roleBinding: {
            identityUid: worker.uid,
            roleUid: viewer.uid,
            expireTime: timestampFromMs(at),
          },
        },
        { roleBinding: { identityUid: worker.uid, roleUid: editor.uid } },
      ],
    });
    expect(
      made.roleBindings.map((b) => b.expireTime && timestampDate(b.expireTime).getTime()),
    ).toEqual([at, undefined]);
    const caller = createClient(CallerService, transportFor("grpc", ts.url, worker.headers));
    const roles = async () =>
      (await caller.getCaller({})).roleBindings.map((b) => b.role?.name).sort();
    expect(await roles()).toEqual(["editor", "viewer"]);
    const saved = clock.t;
    clock.t = at;
    expect(await roles()).toEqual(["editor"]);
    clock.t = saved;
    // A batch whose one expiry is in the past makes nothing, naming the request.
    const refused = await failure(
      owner().roleBindings.batchCreateRoleBindings({
        parent: group,
        requests: [
          {
            roleBinding: {
              identityUid: worker.uid,
              roleUid: builtinRoles.find((r) => r.name === "registry.pull")!.uid,
              expireTime: timestampFromMs(clock.t - 1),
            },
          },
        ],
      }),
    );
    expect(refused).toMatchObject({ code: Code.InvalidArgument });
    expect(JSON.stringify(refused)).toContain("requests[0].roleBinding.expireTime");
  });

  it.each([
    ["in the past", -minute, "must lie in the future"],
    ["now", 0, "must lie in the future"],
    ["more than 366 days ahead", 367 * 24 * 60 * minute, "at most 366 days"],
  ])("refuses an expireTime %s as INVALID_ARGUMENT", async (_what, offset, message) => {
    const worker = await ts.makeIdentity(org.uid);
    const body = {
      identityUid: worker.uid,
      roleUid: viewer.uid,
      expireTime: new Date(clock.t + offset).toISOString(),
    };
    const res = await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/roleBindings/${org.uid}`,
      body,
      org.owner.headers,
    );
    expect(res.status).toBe(400);
    expect(badRequestFields(res.json)).toEqual(["expireTime"]);
    expect(JSON.stringify(res.json)).toContain(message);
    const listed = await owner().roleBindings.listRoleBindings({ identity: worker.uid });
    expect(listed.roleBindings).toEqual([]);
  });

  it("an expiring owner never counts as the organization's last owner", async () => {
    const second = await owner().roleBindings.listRoleBindings({
      identity: org.owner.uid,
      group: org.uid,
    });
    const ownerBinding = second.roleBindings[0]!;
    // The only lasting owner binding may not be made to expire.
    expect(
      await failure(
        owner().roleBindings.updateRoleBinding({
          roleBinding: { uid: ownerBinding.uid, expireTime: timestampFromMs(clock.t + minute) },
          updateMask: { paths: ["expire_time"] },
        }),
      ),
    ).toMatchObject({ code: Code.FailedPrecondition });
  });
});
