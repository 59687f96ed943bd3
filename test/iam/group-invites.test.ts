import { Code } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupInvite_State } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { personUid } from "../../src/services/sts/exchange.js";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { newChildUid } from "../../src/uid.js";
import {
  failure,
  type IamClients,
  iamClients,
  protocols,
  transportFor,
} from "../helpers/iam-clients.js";
import { listOrder } from "../helpers/list-order.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import { stsClients } from "../helpers/sts-clients.js";
import {
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
const day = 86_400_000;

let ts: TestServer;
let users: OidcIssuer;
let org: TestOrg;
let other: TestOrg;
/** The server's clock: real time plus what a test has moved it on by. */
let skew = 0;
/** Every log line the server wrote, at debug level. */
const logs: string[] = [];
/** Every code Create returned, to look for in the logs at the end. */
const codes: string[] = [];

beforeAll(async () => {
  users = await startOidcIssuer({ alg: "ES256" });
  ts = await startTestServer(
    {
      GATEHOUSE_LOG_LEVEL: "debug",
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      GATEHOUSE_TRUSTED_USER_ISSUERS: users.url,
    },
    { now: () => Date.now() + skew, logStream: { write: (line) => void logs.push(line) } },
  );
  org = await ts.makeOrg("inviting");
  other = await ts.makeOrg("elsewhere");
});
afterAll(async () => {
  await ts?.close();
  await users?.stop();
});

/** Log a person in through the trusted test issuer; returns their Gatehouse token. */
async function login(sub: string, claims: Record<string, unknown> = {}): Promise<TestCaller> {
  const exchange = stsClients(ts.url)["REST GET"]!;
  const oidc = await users.issue({ aud: ts.config.baseUrl, sub, ...claims });
  const r = await exchange(oidc, { aud: ts.config.baseUrl });
  if (!r.ok) throw new Error(`login refused: ${r.code} ${r.message}`);
  const uid = decodeJwt(r.token).sub as string;
  expect(uid).toBe(personUid(users.url, sub));
  return { uid, token: r.token, headers: { authorization: `Bearer ${r.token}` } };
}

const clientsOf = (headers: Record<string, string>, protocol: (typeof protocols)[number]) =>
  iamClients(transportFor(protocol, ts.url, headers));

/** The bindings of `identity` at `group`, straight from the store. */
async function bindingsOf(identity: string, group: string) {
  return (
    await ts.store.listRoleBindings({
      filters: { identity, group },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 200,
    })
  ).items;
}

async function newGroup(c: IamClients, name: string): Promise<string> {
  return (await c.groups.createGroup({ parent: org.uid, group: { name } })).uid;
}

describe.each(protocols)("group invites over %s", (protocol) => {
  let c: IamClients;
  let group: string;
  beforeAll(async () => {
    c = clientsOf(org.owner.headers, protocol);
    group = await newGroup(c, `inv-${protocol}`);
  });
  const invite = (groupInvite: Parameters<IamClients["groupInvites"]["createGroupInvite"]>[0]) =>
    c.groupInvites.createGroupInvite(groupInvite);

  it("creates with a code and a computed expiry, then never shows the code again", async () => {
    const before = Date.now();
    const created = await invite({ parent: group, groupInvite: { roleUid: viewer.uid } });
    codes.push(created.code!);
    expect(created.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(created.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(created.role).toMatchObject({ uid: viewer.uid, name: "viewer" });
    expect(created.singleUse).toBe(false);
    expect(created.email).toBe("");
    expect(created.ttl).toBeUndefined();
    const exp = Number(created.expirationTime?.seconds) * 1000;
    expect(exp).toBeGreaterThanOrEqual(before + 7 * day - 1000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 7 * day);

    // The console link carries the code in its fragment; like the code, only Create has it.
    expect(created.link).toBe(`${ts.url}/console/#/invite/${created.code}`);
    const got = await c.groupInvites.getGroupInvite({ uid: created.uid });
    expect(got.code).toBeUndefined();
    expect(got.link).toBeUndefined();
    expect(got).toEqual({ ...created, code: undefined, link: undefined });
    const listed = await c.groupInvites.listGroupInvites({
      uidp: { childrenOf: group, descendantsOf: "" },
    });
    expect(listed.groupInvites.map((i) => i.code ?? i.link)).toEqual([undefined]);
    const updated = await c.groupInvites.updateGroupInvite({
      groupInvite: { uid: created.uid, singleUse: true },
    });
    expect(updated.code ?? updated.link).toBeUndefined();
    const stored = (ts.store as SqliteStore).db
      .prepare("SELECT * FROM group_invites WHERE uid = ?")
      .get(created.uid);
    expect(JSON.stringify(stored)).not.toContain(created.code);
  });

  it("lists by uidp with paging, updates with and without a mask, and deletes", async () => {
    const sub = await newGroup(c, `inv-list-${protocol}`);
    const made = [];
    for (const email of ["a@x.test", "b@x.test", "c@x.test"]) {
      made.push(await invite({ parent: sub, groupInvite: { roleUid: viewer.uid, email } }));
    }
    codes.push(...made.map((m) => m.code!));
    const first = await c.groupInvites.listGroupInvites({
      uidp: { childrenOf: sub, descendantsOf: "" },
      pageSize: 2,
    });
    // Made one after the other, perhaps within one millisecond: listed by create_time, then uid.
    const inOrder = listOrder(made).map((m) => m.email);
    expect(first.groupInvites.map((i) => i.email)).toEqual(inOrder.slice(0, 2));
    expect(first.totalCount).toBe(3n);
    const second = await c.groupInvites.listGroupInvites({
      uidp: { childrenOf: sub, descendantsOf: "" },
      pageSize: 2,
      pageToken: first.nextPageToken ?? "",
    });
    expect(second.groupInvites.map((i) => i.email)).toEqual(inOrder.slice(2));
    expect(second.nextPageToken).toBeUndefined();
    const below = await c.groupInvites.listGroupInvites({
      uidp: { descendantsOf: org.uid, childrenOf: "" },
      pageSize: 200,
    });
    expect(below.groupInvites.map((i) => i.uid)).toEqual(
      expect.arrayContaining(made.map((m) => m.uid)),
    );
    const byRoleName = await c.groupInvites.listGroupInvites({
      uidp: { childrenOf: sub, descendantsOf: "" },
      name: "editor",
    });
    expect(byRoleName.totalCount).toBe(0n);

    const target = made[0]!;
    // No mask: the populated fields change (email, ttl); singleUse, unset, keeps its value.
    skew += 1000;
    const before = Date.now() + skew;
    const changed = await c.groupInvites.updateGroupInvite({
      groupInvite: { uid: target.uid, email: "z@x.test", ttl: { seconds: 3600n } },
    });
    const after = Date.now() + skew;
    skew -= 1000;
    expect(changed.email).toBe("z@x.test");
    // An hour from the server's clock during the call, in whole seconds.
    const exp = Number(changed.expirationTime?.seconds) * 1000;
    expect(exp).toBeGreaterThanOrEqual(Math.floor((before + 3_600_000) / 1000) * 1000);
    expect(exp).toBeLessThanOrEqual(after + 3_600_000);
    expect(changed.role?.uid).toBe(viewer.uid);
    // role_uid is fixed at creation (IMMUTABLE): another role is refused, the same one passes.
    expect(
      await failure(
        c.groupInvites.updateGroupInvite({
          groupInvite: { uid: target.uid, roleUid: editor.uid },
          updateMask: { paths: ["role_uid"] },
        }),
      ),
    ).toMatchObject({ code: Code.InvalidArgument });
    // A mask: only single_use changes, the email in the body is ignored.
    const masked = await c.groupInvites.updateGroupInvite({
      groupInvite: {
        uid: target.uid,
        email: "ignored@x.test",
        singleUse: true,
        roleUid: viewer.uid,
      },
      updateMask: { paths: ["single_use", "role_uid"] },
    });
    expect(masked).toMatchObject({ email: "z@x.test", singleUse: true, roleUid: viewer.uid });
    expect(masked.expirationTime).toEqual(changed.expirationTime);
    // `*`: full replacement: email cleared, single use off, the default lifetime again.
    const replaced = await c.groupInvites.updateGroupInvite({
      groupInvite: { uid: target.uid },
      updateMask: { paths: ["*"] },
    });
    expect(replaced).toMatchObject({ email: "", singleUse: false });
    expect(Number(replaced.expirationTime?.seconds) * 1000).toBeGreaterThan(Date.now() + 6 * day);

    await c.groupInvites.deleteGroupInvite({ uid: target.uid });
    expect(await failure(c.groupInvites.getGroupInvite({ uid: target.uid }))).toMatchObject({
      code: Code.NotFound,
    });
    expect(await failure(c.groupInvites.deleteGroupInvite({ uid: target.uid }))).toMatchObject({
      code: Code.NotFound,
    });
  });

  it.each([
    ["no role", { roleUid: "" }, ["roleUid"]],
    ["a malformed role", { roleUid: "nope" }, ["roleUid"]],
    ["a zero ttl", { roleUid: viewer.uid, ttl: { seconds: 0n } }, ["ttl"]],
    ["a negative ttl", { roleUid: viewer.uid, ttl: { seconds: -5n } }, ["ttl"]],
    ["a ttl over 30 days", { roleUid: viewer.uid, ttl: { seconds: 30n * 86400n + 1n } }, ["ttl"]],
    ["a bad email", { roleUid: viewer.uid, email: "not-an-email" }, ["email"]],
    [
      "several faults",
      { roleUid: "", email: "x", ttl: { seconds: -1n } },
      ["roleUid", "email", "ttl"],
    ],
  ] as const)("refuses %s", async (_name, body, fields) => {
    const err = await failure(invite({ parent: group, groupInvite: body }));
    expect(err).toMatchObject({ code: Code.InvalidArgument, reason: "INVALID_ARGUMENT", fields });
  });

  it("accepts exactly 30 days, and refuses a bad update", async () => {
    const ok = await invite({
      parent: group,
      groupInvite: { roleUid: viewer.uid, ttl: { seconds: 30n * 86400n } },
    });
    codes.push(ok.code!);
    const bad = await failure(
      c.groupInvites.updateGroupInvite({ groupInvite: { uid: ok.uid, ttl: { seconds: -1n } } }),
    );
    expect(bad).toMatchObject({ code: Code.InvalidArgument, fields: ["ttl"] });
    const mask = await failure(
      c.groupInvites.updateGroupInvite({
        groupInvite: { uid: ok.uid },
        updateMask: { paths: ["colour"] },
      }),
    );
    expect(mask).toMatchObject({ code: Code.InvalidArgument, fields: ["update_mask"] });
  });

  it("refuses a role not usable at the group, and a missing group", async () => {
    const foreignRole = newChildUid(other.uid);
    await ts.store.createRole({
      uid: foreignRole,
      groupUid: other.uid,
      name: "theirs",
      description: "",
      capabilities: ["groups.list"],
      now: Date.now(),
    });
    const err = await failure(invite({ parent: group, groupInvite: { roleUid: foreignRole } }));
    expect(err).toMatchObject({ code: Code.InvalidArgument, fields: ["roleUid"] });
    const missing = await failure(
      invite({ parent: newChildUid(org.uid), groupInvite: { roleUid: viewer.uid } }),
    );
    expect(missing.code).toBe(Code.NotFound);
  });

  it("lets nobody invite with a role they could not bind", async () => {
    // An inviter holds the invite capabilities, role_bindings.create and groups.list only.
    const inviterRole = newChildUid(org.uid);
    await ts.store.createRole({
      uid: inviterRole,
      groupUid: org.uid,
      name: `inviter-${protocol}`,
      description: "",
      capabilities: [
        "group_invites.create",
        "group_invites.update",
        "group_invites.list",
        "role_bindings.create",
        "groups.list",
      ],
      now: Date.now(),
    });
    const small = newChildUid(org.uid);
    await ts.store.createRole({
      uid: small,
      groupUid: org.uid,
      name: `small-${protocol}`,
      description: "",
      capabilities: ["groups.list"],
      now: Date.now(),
    });
    const inviter = await ts.makeIdentity(group, [inviterRole]);
    const ci = clientsOf(inviter.headers, protocol);
    const ok = await ci.groupInvites.createGroupInvite({
      parent: group,
      groupInvite: { roleUid: small },
    });
    codes.push(ok.code!);
    const denied = await failure(
      ci.groupInvites.createGroupInvite({ parent: group, groupInvite: { roleUid: viewer.uid } }),
    );
    expect(denied.code).toBe(Code.PermissionDenied);
    // Reviving the owner's invite of a role the inviter lacks is a grant too.
    const owners = await invite({ parent: group, groupInvite: { roleUid: ownerRole.uid } });
    codes.push(owners.code!);
    const revive = await failure(
      ci.groupInvites.updateGroupInvite({
        groupInvite: { uid: owners.uid, ttl: { seconds: 60n } },
      }),
    );
    expect(revive.code).toBe(Code.PermissionDenied);
    // Without role_bindings.create, even a role one holds cannot be offered.
    const noBind = await ts.makeIdentity(group, ["owner"]);
    await ts.store.deleteRoleBinding((await bindingsOf(noBind.uid, group))[0]!.uid);
    const plain = newChildUid(org.uid);
    await ts.store.createRole({
      uid: plain,
      groupUid: org.uid,
      name: `plain-${protocol}`,
      description: "",
      capabilities: ["group_invites.create", "groups.list"],
      now: Date.now(),
    });
    const p = await ts.makeIdentity(group, [plain]);
    const refused = await failure(
      clientsOf(p.headers, protocol).groupInvites.createGroupInvite({
        parent: group,
        groupInvite: { roleUid: small },
      }),
    );
    expect(refused).toMatchObject({ code: Code.PermissionDenied });
    expect(refused.message).toContain("role_bindings.create");
  });

  it("redeems: binds the caller, hydrated, once however often it is redeemed", async () => {
    const made = await invite({ parent: group, groupInvite: { roleUid: viewer.uid } });
    codes.push(made.code!);
    const person = await login(`redeemer-${protocol}`, { name: `Redeemer ${protocol}` });
    const pc = clientsOf(person.headers, protocol);
    expect((await failure(pc.groups.getGroup({ uid: group }))).code).toBe(Code.PermissionDenied);
    const b = await pc.groupInvites.redeemGroupInvite({ code: made.code! });
    expect(b.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(b.identity).toMatchObject({ uid: person.uid, name: `Redeemer ${protocol}` });
    expect(b.group).toMatchObject({ uid: group, name: `inv-${protocol}` });
    expect(b.role).toMatchObject({ uid: viewer.uid, name: "viewer" });
    expect((await pc.groups.getGroup({ uid: group })).uid).toBe(group);
    const again = await pc.groupInvites.redeemGroupInvite({ code: made.code! });
    expect(again.uid).toBe(b.uid);
    expect(await bindingsOf(person.uid, group)).toHaveLength(1);
    // The trail says an invite made the grant, and whose invite: not a self-grant.
    const trail = await restCall(
      ts.url,
      "GET",
      `/events/v2beta1/events?uidp.childrenOf=${b.uid}`,
      undefined,
      org.owner.headers,
    );
    // (The first redemption's; the second, which bound no one anew, is recorded too.)
    expect((trail.json.events as unknown[])[0]).toMatchObject({
      type: "dev.gatehouse.iam.group_invite.redeemed.v1",
      data: {
        actor: { uid: person.uid },
        reason: "invite",
        via: { inviteUid: made.uid, creatorUid: org.owner.uid },
        roleBinding: { identity: { uid: person.uid }, role: { name: "viewer" } },
      },
    });
    // Not single use: it stays for the next person.
    expect((await c.groupInvites.getGroupInvite({ uid: made.uid })).uid).toBe(made.uid);
  });

  it("answers NOT_FOUND for an unknown code without echoing it, and needs a token", async () => {
    const person = await login(`guesser-${protocol}`);
    const guess = "x".repeat(43);
    const err = await failure(
      clientsOf(person.headers, protocol).groupInvites.redeemGroupInvite({ code: guess }),
    );
    expect(err).toMatchObject({ code: Code.NotFound, reason: "NOT_FOUND" });
    expect(err.message).not.toContain(guess);
    const empty = await failure(
      clientsOf(person.headers, protocol).groupInvites.redeemGroupInvite({ code: "" }),
    );
    expect(empty).toMatchObject({ code: Code.InvalidArgument, fields: ["code"] });
    const anon = await failure(
      clientsOf({}, protocol).groupInvites.redeemGroupInvite({ code: guess }),
    );
    expect(anon.code).toBe(Code.Unauthenticated);
  });
});

describe("group invites over REST", () => {
  const rest = (method: string, path: string, body?: unknown, headers = org.owner.headers) =>
    restCall(ts.url, method, path, body, headers);
  let group: string;
  beforeAll(async () => {
    group = (await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "inv-rest" })).json.uid;
  });

  it("creates, gets, lists with paging, patches with and without a mask, and deletes", async () => {
    const made = [];
    for (const ttl of ["3600s", "7200s"]) {
      const r = await rest("POST", `/iam/v2beta1/groupInvites/${group}`, {
        roleUid: viewer.uid,
        ttl,
      });
      expect(r.status).toBe(200);
      expect(r.json.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(r.json.ttl).toBeUndefined();
      expect(r.json.role).toMatchObject({ uid: viewer.uid, name: "viewer" });
      codes.push(r.json.code);
      made.push(r.json);
    }
    const uid = made[0].uid as string;
    const got = await rest("GET", `/iam/v2beta1/groupInvites/${uid}`);
    expect(got.status).toBe(200);
    expect(got.json).not.toHaveProperty("code");
    expect(got.json.expirationTime).toBe(made[0].expirationTime);
    const page = await rest(
      "GET",
      `/iam/v2beta1/groupInvites?uidp.children_of=${group}&page_size=1`,
    );
    expect(page.json.groupInvites).toHaveLength(1);
    expect(page.json.totalCount).toBe("2");
    const next = await rest(
      "GET",
      `/iam/v2beta1/groupInvites?uidp.childrenOf=${group}&pageSize=1&pageToken=${page.json.nextPageToken}`,
    );
    expect(next.json.groupInvites.map((i: { uid: string }) => i.uid)).toEqual([
      listOrder(made)[1].uid,
    ]);
    expect(next.json.nextPageToken).toBeUndefined();
    expect(JSON.stringify([page.json, next.json])).not.toContain(made[0].code);

    const patched = await rest("PATCH", `/iam/v2beta1/groupInvites/${uid}`, {
      email: "Pat@x.test",
      singleUse: true,
    });
    expect(patched.json).toMatchObject({ email: "Pat@x.test", singleUse: true });
    expect(patched.json).not.toHaveProperty("code");
    expect(patched.json.expirationTime).toBe(made[0].expirationTime);
    const masked = await rest("PATCH", `/iam/v2beta1/groupInvites/${uid}?updateMask=email`, {
      email: "",
      singleUse: false,
    });
    // The mask names email only: it is cleared, singleUse (false in the body) keeps true.
    expect(masked.json.singleUse).toBe(true);
    expect(masked.json.email ?? "").toBe("");

    const bad = await rest("POST", `/iam/v2beta1/groupInvites/${group}`, {
      roleUid: viewer.uid,
      ttl: "2592001s",
      email: "nope",
    });
    expect(bad.status).toBe(400);
    expect(badRequestFields(bad.json)).toEqual(["email", "ttl"]);
    // code is output only: a code chosen by the caller is never used.
    const chosen = await rest("POST", `/iam/v2beta1/groupInvites/${group}`, {
      roleUid: viewer.uid,
      code: "mine",
    });
    expect(chosen.status).toBe(200);
    expect(chosen.json.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    codes.push(chosen.json.code);

    expect((await rest("DELETE", `/iam/v2beta1/groupInvites/${uid}`)).json).toEqual({});
    expect((await rest("GET", `/iam/v2beta1/groupInvites/${uid}`)).status).toBe(404);
  });

  it("redeems at POST groupInvites:redeem", async () => {
    const made = await rest("POST", `/iam/v2beta1/groupInvites/${group}`, {
      roleUid: viewer.uid,
      singleUse: true,
    });
    codes.push(made.json.code);
    const person = await login("rest-redeemer");
    const r = await rest(
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: made.json.code },
      person.headers,
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ identity: { uid: person.uid }, group: { uid: group } });
    const again = await rest(
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: made.json.code },
      person.headers,
    );
    expect(again.status).toBe(404);
    expect(JSON.stringify(again.json)).not.toContain(made.json.code);
    const anon = await rest("POST", "/iam/v2beta1/groupInvites:redeem", { code: "x" }, {});
    expect(anon.status).toBe(401);
  });
});

describe("invite life cycle", () => {
  let c: IamClients;
  let group: string;
  beforeAll(async () => {
    c = clientsOf(org.owner.headers, "connect");
    group = await newGroup(c, "life");
  });
  const invite = async (
    body: Parameters<IamClients["groupInvites"]["createGroupInvite"]>[0]["groupInvite"],
  ) => {
    const made = await c.groupInvites.createGroupInvite({ parent: group, groupInvite: body });
    if (made.code === undefined) throw new Error("Create returned no code");
    codes.push(made.code);
    return { ...made, code: made.code };
  };
  const redeem = (who: TestCaller, code: string) =>
    clientsOf(who.headers, "connect").groupInvites.redeemGroupInvite({ code });

  it("lets a single-use invite be redeemed once, and then it is gone", async () => {
    const made = await invite({ roleUid: viewer.uid, singleUse: true });
    const alice = await login("single-alice");
    const bob = await login("single-bob");
    await redeem(alice, made.code);
    expect((await failure(redeem(bob, made.code))).code).toBe(Code.NotFound);
    expect((await failure(redeem(alice, made.code))).code).toBe(Code.NotFound);
    expect((await failure(c.groupInvites.getGroupInvite({ uid: made.uid }))).code).toBe(
      Code.NotFound,
    );
    expect(await bindingsOf(bob.uid, group)).toHaveLength(0);
  });

  it("expires on the server's clock", async () => {
    const made = await invite({ roleUid: viewer.uid, ttl: { seconds: 60n } });
    const carol = await login("expiring-carol");
    const dave = await login("expiring-dave");
    skew = 59_000;
    try {
      await redeem(carol, made.code);
      skew = 60_000;
      const late = await failure(redeem(dave, made.code));
      expect(late).toMatchObject({ code: Code.NotFound });
      expect(late.message).not.toContain(made.code);
      // Still listed (an owner sees it expired), but redeemable again only once renewed.
      const renewed = await c.groupInvites.updateGroupInvite({
        groupInvite: { uid: made.uid, ttl: { seconds: 60n } },
      });
      expect(Number(renewed.expirationTime?.seconds) * 1000).toBeGreaterThan(Date.now() + 60_000);
      await redeem(dave, made.code);
    } finally {
      skew = 0;
    }
  });

  it("lets only the verified email named redeem an email-bound invite", async () => {
    const made = await invite({ roleUid: viewer.uid, email: "erin@acme.test" });
    const erin = await login("erin", { email: "Erin@Acme.test", email_verified: true });
    const mallory = await login("mallory", { email: "mallory@acme.test", email_verified: true });
    const unverified = await login("pretender", { email: "erin@acme.test", email_verified: false });
    for (const who of [mallory, unverified]) {
      const err = await failure(redeem(who, made.code));
      expect(err).toMatchObject({ code: Code.PermissionDenied, reason: "PERMISSION_DENIED" });
      expect(await bindingsOf(who.uid, group)).toHaveLength(0);
    }
    // A workload token carries no email at all.
    const workload = await ts.makeIdentity(group);
    expect((await failure(redeem(workload, made.code))).code).toBe(Code.PermissionDenied);
    const b = await redeem(erin, made.code);
    expect(b.identity?.uid).toBe(erin.uid);
  });

  it("compares emails by ASCII case only: a Unicode look-alike does not pass", async () => {
    const made = await invite({ roleUid: viewer.uid, email: "kate@acme.test" });
    // U+212A KELVIN SIGN lowercases to "k" under Unicode rules.
    const kelvin = await login("kelvin-kate", {
      email: "\u212Aate@acme.test",
      email_verified: true,
    });
    expect((await failure(redeem(kelvin, made.code))).code).toBe(Code.PermissionDenied);
    expect(await bindingsOf(kelvin.uid, group)).toHaveLength(0);
    const kate = await login("real-kate", { email: "KATE@ACME.TEST", email_verified: true });
    expect((await redeem(kate, made.code)).identity?.uid).toBe(kate.uid);
  });

  it("lapses with its creator's authority, and says so when listed", async () => {
    // A subgroup owner invites with owner; then loses the binding that let them.
    const sub = await newGroup(c, "delegated");
    const deputy = await ts.makeIdentity(org.uid);
    const grant = await c.roleBindings.createRoleBinding({
      parent: sub,
      roleBinding: { identityUid: deputy.uid, roleUid: ownerRole.uid },
    });
    const d = clientsOf(deputy.headers, "connect");
    const made = await d.groupInvites.createGroupInvite({
      parent: sub,
      groupInvite: { roleUid: ownerRole.uid },
    });
    codes.push(made.code!);
    expect(made.creatorUid).toBe(deputy.uid);
    expect(made.state).toBe(GroupInvite_State.ACTIVE);
    await c.roleBindings.deleteRoleBinding({ uid: grant.uid });

    const listed = await c.groupInvites.getGroupInvite({ uid: made.uid });
    expect(listed.state).toBe(GroupInvite_State.CREATOR_LACKS_AUTHORITY);
    const newcomer = await login("late-newcomer");
    const err = await failure(redeem(newcomer, made.code!));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(await bindingsOf(newcomer.uid, sub)).toHaveLength(0);

    // Its creator gone altogether: refused the same way.
    await c.roleBindings.createRoleBinding({
      parent: sub,
      roleBinding: { identityUid: deputy.uid, roleUid: ownerRole.uid },
    });
    expect((await c.groupInvites.getGroupInvite({ uid: made.uid })).state).toBe(
      GroupInvite_State.ACTIVE,
    );
    await c.identities.deleteIdentity({ uid: deputy.uid });
    expect((await failure(redeem(newcomer, made.code!))).code).toBe(Code.FailedPrecondition);
  });

  it("refuses a workload identity of another organization", async () => {
    const made = await invite({ roleUid: viewer.uid });
    const foreign = await ts.makeIdentity(other.uid);
    expect((await failure(redeem(foreign, made.code))).code).toBe(Code.PermissionDenied);
    const own = await ts.makeIdentity(org.uid);
    expect((await redeem(own, made.code)).identity?.uid).toBe(own.uid);
  });

  it("binds exactly once when ten people redeem one single-use code at once", async () => {
    const made = await invite({ roleUid: editor.uid, singleUse: true });
    const people: TestCaller[] = [];
    for (let i = 0; i < 10; i++) people.push(await login(`rush-${i}`));
    const results = await Promise.allSettled(people.map((p) => redeem(p, made.code)));
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect((await failure(Promise.reject(r.reason))).code).toBe(5);
    }
    const all = await ts.store.listRoleBindings({
      filters: { group, role: editor.uid },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 200,
    });
    expect(all.items).toHaveLength(1);
  });

  it("binds exactly once when one person redeems a code ten times at once", async () => {
    const made = await invite({ roleUid: ownerRole.uid });
    const frank = await login("frank");
    const bindings = await Promise.all(Array.from({ length: 10 }, () => redeem(frank, made.code)));
    expect(new Set(bindings.map((b) => b.uid)).size).toBe(1);
    expect(await bindingsOf(frank.uid, group)).toHaveLength(1);
  });

  it("goes with its group", async () => {
    const leaf = await newGroup(c, "short-lived");
    const made = await c.groupInvites.createGroupInvite({
      parent: leaf,
      groupInvite: { roleUid: viewer.uid },
    });
    codes.push(made.code!);
    await c.groups.deleteGroup({ uid: leaf });
    expect(await ts.store.getGroupInvite(made.uid)).toBeUndefined();
    const gina = await login("gina");
    expect((await failure(redeem(gina, made.code!))).code).toBe(Code.NotFound);
  });
});

describe("secrecy", () => {
  it("never writes a code to the log", () => {
    expect(codes.length).toBeGreaterThan(10);
    expect(logs.length).toBeGreaterThan(0);
    const all = logs.join("");
    for (const code of codes) expect(all).not.toContain(code);
  });
});
