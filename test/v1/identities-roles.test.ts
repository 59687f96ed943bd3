import { createClient } from "@connectrpc/connect";
import { exportJWK, generateKeyPair } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import {
  IdentitiesService,
  IdentitySchema,
} from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { RoleSchema, RolesService } from "../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { apiJson } from "../helpers/api-json.js";
import { transportFor } from "../helpers/iam-clients.js";
import type { Json } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";
import {
  idsOf,
  okJson as ok,
  uidpIds,
  type V1Client,
  v1Client,
  v1Protocols,
  v1Resources,
} from "../helpers/v1-clients.js";

const { identities, roles } = v1Resources;
let org: TestOrg;
let team: string;

// The server's clock on whole seconds, on purpose: a time protobuf-es's toJson writes as
// `...:41Z` and the API as `...:41.000Z`; comparisons go through apiJson, the API's form.
const ts = useTestServer({}, { now: () => Math.floor(Date.now() / 1000) * 1000 });
beforeAll(async () => {
  org = await ts.makeOrg("v1-iam");
  team = newChildUid(org.uid);
  await ts.store.createGroup({
    uid: team,
    parentUid: org.uid,
    name: "team",
    description: "",
    now: 1,
  });
});

const transport = () => transportFor("connect", ts.url, org.owner.headers);

describe.each(v1Protocols)("v1 Identities over %s", (protocol) => {
  let c: V1Client;
  const v2 = () => createClient(IdentitiesService, transport());
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates, lists, replaces and deletes, agreeing with v2 field by field", async () => {
    const made = ok(
      await c.create(identities, team, {
        name: `ci-${protocol}`,
        description: "builds",
        claimMatch: { issuer: "https://ci.test", subject: `main-${protocol}` },
      }),
    );
    expect(made).toMatchObject({
      name: `ci-${protocol}`,
      claimMatch: { issuer: "https://ci.test", subject: `main-${protocol}` },
    });
    const id = made.id as string;
    const through2 = apiJson(
      IdentitySchema,
      (await v2().getIdentity({ uid: id })) as never,
    ) as Json;
    expect(through2).toMatchObject({
      uid: id,
      name: made.name,
      description: made.description,
      claimMatch: made.claimMatch,
      createTime: made.createdAt,
      updateTime: made.updatedAt,
      lastSeenTime: made.lastSeen,
    });

    expect(await uidpIds(c, identities, "children_of", team)).toContain(id);
    expect(await uidpIds(c, identities, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, identities, "ancestors_of", `${id}/x`)).toEqual([id]);
    expect(await uidpIds(c, identities, "in_root", "true")).not.toContain(id);
    expect(idsOf(ok(await c.list(identities, [["uidp.ids", id]])))).toEqual([id]);
    expect(ok(await c.list(identities, [["id", id]]))).toEqual({ items: [made] });
    expect(ok(await c.list(identities, [["id", `${team}/ffffffffffffffff`]]))).toEqual({
      items: [],
    });

    // Full replace: the description left out is reset; the claim match is replaced whole.
    const put = ok(
      await c.update(identities, id, {
        name: `ci2-${protocol}`,
        claimMatch: { issuer: "https://ci.test", subjectPattern: "main-.*" },
      }),
    );
    expect(put).toMatchObject({
      id,
      name: `ci2-${protocol}`,
      description: "",
      claimMatch: { issuer: "https://ci.test", subject: "", subjectPattern: "main-.*" },
    });
    expect(await v2().getIdentity({ uid: id })).toMatchObject({
      name: `ci2-${protocol}`,
      description: "",
    });

    expect(ok(await c.delete(identities, id))).toEqual({});
    expect(ok(await c.list(identities, [["id", id]]))).toEqual({ items: [] });
  });

  it("takes and shows static keys", async () => {
    const jwks = JSON.stringify({ keys: [] });
    const made = await c.create(identities, team, {
      name: `static-${protocol}`,
      static: { issuer: "https://static.test", subject: "s", issuerKeys: jwks },
    });
    // Whatever v2 decides about this JWKS, v1 answers the same.
    const v2Made = await v2()
      .createIdentity({
        parent: team,
        identity: {
          name: `static2-${protocol}`,
          method: {
            case: "staticKeys",
            value: { issuer: "https://static.test", subject: "s2", issuerKeys: jwks },
          },
        },
      })
      .then(
        (i) => ({ ok: true, i }),
        (e) => ({ ok: false, e }),
      );
    expect(made.ok).toBe(v2Made.ok);
    if (made.ok) {
      expect(made.json.static).toMatchObject({ issuer: "https://static.test", subject: "s" });
    }
  });

  it("gives static keys created without an expiration v1's 30 days", async () => {
    const { publicKey } = await generateKeyPair("ES256");
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] });
    const made = ok(
      await c.create(identities, team, {
        name: `static30-${protocol}`,
        static: { issuer: "https://static.test", subject: `s30-${protocol}`, issuerKeys: jwks },
      }),
    );
    const through2 = await v2().getIdentity({ uid: made.id });
    expect(through2.method.case).toBe("staticKeys");
    const sk = through2.method.value as { expirationTime?: { seconds: bigint; nanos: number } };
    const created = Number(through2.createTime!.seconds);
    const days = (Number(sk.expirationTime!.seconds) - created) / 86_400;
    expect(Math.round(days)).toBe(30);
    expect(new Date(made.static.expiration).getTime()).toBe(
      Number(sk.expirationTime!.seconds) * 1000 + sk.expirationTime!.nanos / 1e6,
    );
  });

  it("shows an identity written through v2", async () => {
    const i = await v2().createIdentity({
      parent: team,
      identity: {
        name: `v2-${protocol}`,
        method: { case: "claimMatch", value: { issuer: "https://x.test", subject: protocol } },
      },
    });
    const json = apiJson(IdentitySchema, i as never) as Json;
    const [item] = ok(await c.list(identities, [["id", i.uid]])).items;
    expect(item).toEqual({
      id: json.uid,
      name: json.name,
      description: json.description,
      createdAt: json.createTime,
      updatedAt: json.updateTime,
      lastSeen: json.lastSeenTime,
      claimMatch: json.claimMatch,
    });
  });
});

describe.each(v1Protocols)("v1 Roles over %s", (protocol) => {
  let c: V1Client;
  const v2 = () => createClient(RolesService, transport());
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates, lists, replaces and deletes, agreeing with v2 field by field", async () => {
    const made = ok(
      await c.create(roles, team, {
        name: `lister-${protocol}`,
        description: "reads",
        capabilities: ["groups.list", "identities.list"],
      }),
    );
    expect(made.capabilities).toEqual(["groups.list", "identities.list"]);
    const id = made.id as string;
    const json = apiJson(RoleSchema, (await v2().getRole({ uid: id })) as never) as Json;
    expect(made).toEqual({
      id: json.uid,
      name: json.name,
      description: json.description,
      capabilities: json.capabilities,
    });

    expect(await uidpIds(c, roles, "children_of", team)).toEqual([id]);
    expect(await uidpIds(c, roles, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, roles, "ancestors_of", `${id}/x`)).toEqual([id]);
    // The built-in roles are the roles at the root.
    expect(await uidpIds(c, roles, "in_root", "true")).toEqual(
      builtinRoles.map((r) => r.uid).sort(),
    );
    expect(idsOf(ok(await c.list(roles, [["uidp.ids", id]])))).toEqual([id]);
    expect(idsOf(ok(await c.list(roles, [["name", `lister-${protocol}`]])))).toEqual([id]);
    expect(idsOf(ok(await c.list(roles, [["parent", team]])))).toEqual([id]);
    expect(idsOf(ok(await c.list(roles, [["parent", "/"]])))).toEqual(
      builtinRoles.map((r) => r.uid).sort(),
    );
    expect(ok(await c.list(roles, [["id", id]]))).toEqual({ items: [made] });
    expect(ok(await c.list(roles, [["id", `${team}/ffffffffffffffff`]]))).toEqual({ items: [] });

    const put = ok(
      await c.update(roles, id, { name: `lister2-${protocol}`, capabilities: ["groups.list"] }),
    );
    expect(put).toMatchObject({ id, description: "", capabilities: ["groups.list"] });
    expect(await v2().getRole({ uid: id })).toMatchObject({
      description: "",
      capabilities: ["groups.list"],
    });

    expect(ok(await c.delete(roles, id))).toEqual({});
    expect(ok(await c.list(roles, [["id", id]]))).toEqual({ items: [] });
  });

  it("refuses what v2 refuses: an unknown capability, a built-in role's update", async () => {
    const bad = await c.create(roles, team, { name: `bad-${protocol}`, capabilities: ["nope"] });
    expect(bad).toMatchObject({ ok: false, code: 3 });
    const viewer = builtinRoles.find((r) => r.name === "viewer")!;
    const builtin = await c.update(roles, viewer.uid, {
      name: "viewer",
      capabilities: ["groups.list"],
    });
    expect(builtin).toMatchObject({ ok: false, code: 9 });
  });
});
