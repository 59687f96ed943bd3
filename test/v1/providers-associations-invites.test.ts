import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AccountAssociationSchema,
  AccountAssociationsService,
} from "../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import {
  IdentityProviderSchema,
  IdentityProvidersService,
} from "../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
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

const { identityProviders, accountAssociations, groupInvites } = v1Resources;
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-more");
});

const transport = () => transportFor("connect", ts.url, org.owner.headers);
const newGroup = async (name: string) => {
  const uid = newChildUid(org.uid);
  await ts.store.createGroup({ uid, parentUid: org.uid, name, description: "", now: 1 });
  return uid;
};

describe.each(v1Protocols)("v1 IdentityProviders over %s", (protocol) => {
  let c: V1Client;
  let team: string;
  const v2 = () => createClient(IdentityProvidersService, transport());
  beforeAll(async () => {
    c = v1Client(protocol, ts.url, org.owner.headers);
    team = await newGroup(`idp-${protocol}`);
  });

  it("creates, lists, replaces and deletes, agreeing with v2 and never showing the secret", async () => {
    const made = ok(
      await c.create(identityProviders, team, {
        name: "corp",
        description: "sso",
        defaultRole: viewer.uid,
        oidc: {
          issuer: "https://idp.test",
          clientId: "gh",
          clientSecret: "s3cret",
          groupsClaim: "g",
        },
      }),
    );
    expect(JSON.stringify(made)).not.toContain("s3cret");
    const id = made.id as string;
    const json = apiJson(
      IdentityProviderSchema,
      (await v2().getIdentityProvider({ uid: id })) as never,
    ) as Json;
    expect(made).toMatchObject({
      id: json.uid,
      name: json.name,
      description: json.description,
      defaultRole: json.defaultRole,
      oidc: {
        issuer: json.oidc.issuer,
        clientId: json.oidc.clientId,
        additionalScopes: json.oidc.additionalScopes,
        groupsClaim: json.oidc.groupsClaim,
      },
    });
    // v1's IdentityProvider has no timestamps: an answer carries only v1's fields.
    expect(made).not.toHaveProperty("createdAt");
    expect(await uidpIds(c, identityProviders, "children_of", team)).toEqual([id]);
    expect(await uidpIds(c, identityProviders, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, identityProviders, "ancestors_of", `${id}/x`)).toEqual([id]);
    expect(await uidpIds(c, identityProviders, "in_root", "true")).toEqual([]);
    expect(idsOf(ok(await c.list(identityProviders, [["uidp.ids", id]])))).toEqual([id]);
    expect(
      idsOf(
        ok(
          await c.list(identityProviders, [
            ["name", "corp"],
            ["uidp.childrenOf", team],
          ]),
        ),
      ),
    ).toEqual([id]);
    expect(ok(await c.list(identityProviders, [["id", id]]))).toEqual({ items: [made] });
    expect(ok(await c.list(identityProviders, [["id", `${team}/ffffffffffffffff`]]))).toEqual({
      items: [],
    });

    const put = ok(
      await c.update(identityProviders, id, {
        name: "corp2",
        defaultRole: editor.uid,
        oidc: { issuer: "https://idp.test", clientId: "gh" },
      }),
    );
    expect(put).toMatchObject({ id, name: "corp2", description: "", defaultRole: editor.uid });
    expect(put.oidc.groupsClaim).toBe("");
    expect(await v2().getIdentityProvider({ uid: id })).toMatchObject({
      name: "corp2",
      description: "",
      defaultRole: editor.uid,
    });
    // The secret stays: same issuer and client.
    expect((await ts.store.getIdentityProvider(id))?.oidc.clientSecret).toBe("s3cret");

    expect(ok(await c.delete(identityProviders, id))).toEqual({});
    expect(ok(await c.list(identityProviders, [["id", id]]))).toEqual({ items: [] });
  });
});

const tenant = "0b6b2a3e-4b1f-4a39-9c39-1d2f3a4b5c6d";
const client = "7f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b";

describe.each(v1Protocols)("v1 account associations over %s", (protocol) => {
  let c: V1Client;
  const v2 = () => createClient(AccountAssociationsService, transport());
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates by group, lists by group and name, replaces and deletes, agreeing with v2", async () => {
    const group = await newGroup(`assoc-${protocol}`);
    const made = ok(
      await c.create(accountAssociations, group, {
        name: `accounts-${protocol}`,
        amazon: { account: "123456789012" },
        azure: { tenantId: tenant, clientIds: { ingester: client, canary: client } },
      }),
    );
    expect(made).toMatchObject({
      group,
      name: `accounts-${protocol}`,
      amazon: { account: "123456789012" },
      azure: { tenantId: tenant, clientIds: { ingester: client, canary: client } },
    });
    const json = apiJson(
      AccountAssociationSchema,
      (await v2().getAccountAssociation({ uid: group })) as never,
    ) as Json;
    expect(json).toMatchObject({
      uid: group,
      name: made.name,
      amazon: made.amazon,
      azure: { tenantId: tenant, clientIds: [client], clientIdKeys: made.azure.clientIds },
    });
    expect(made).not.toHaveProperty("createdAt");
    expect(ok(await c.list(accountAssociations, [["group", group]]))).toEqual({ items: [made] });
    expect(
      idsOf(ok(await c.list(accountAssociations, [["name", `accounts-${protocol}`]])), "group"),
    ).toEqual([group]);
    expect(
      ok(await c.list(accountAssociations, [["group", `${org.uid}/ffffffffffffffff`]])),
    ).toEqual({
      items: [],
    });

    const put = ok(
      await c.update(accountAssociations, group, {
        google: { projectId: "my-project", projectNumber: "123456" },
      }),
    );
    expect(put).toMatchObject({ group, name: "", google: { projectId: "my-project" } });
    expect(put.amazon).toBeUndefined();
    const after = await v2().getAccountAssociation({ uid: group });
    expect(after.amazon).toBeUndefined();
    expect(after.google?.projectId).toBe("my-project");

    expect(ok(await c.delete(accountAssociations, group))).toEqual({});
    expect(ok(await c.list(accountAssociations, [["group", group]]))).toEqual({ items: [] });
  });

  it("keeps the Azure client id keys, and keys an id v2 added by itself", async () => {
    const group = await newGroup(`azure-${protocol}`);
    const keyed = { ingester: client, "key with space": client.toUpperCase() };
    ok(
      await c.create(accountAssociations, group, { azure: { tenantId: tenant, clientIds: keyed } }),
    );
    const read = ok(await c.list(accountAssociations, [["group", group]])).items[0];
    expect(read.azure.clientIds).toEqual({ ingester: client, "key with space": client });

    // v2 lists one more id, naming none: v1 shows it under itself, the names stay.
    const other = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d";
    await v2().updateAccountAssociation({
      accountAssociation: { uid: group, azure: { tenantId: tenant, clientIds: [client, other] } },
      updateMask: { paths: ["azure.client_ids"] },
    });
    const after = ok(await c.list(accountAssociations, [["group", group]])).items[0];
    expect(after.azure.clientIds).toEqual({
      ingester: client,
      "key with space": client,
      [other]: other,
    });
    // v2 drops the id: its names go with it.
    await v2().updateAccountAssociation({
      accountAssociation: { uid: group, azure: { tenantId: tenant, clientIds: [other] } },
      updateMask: { paths: ["azure.client_ids"] },
    });
    const dropped = await v2().getAccountAssociation({ uid: group });
    expect(dropped.azure?.clientIdKeys).toEqual({});
    expect(ok(await c.list(accountAssociations, [["group", group]])).items[0].azure).toEqual({
      tenantId: tenant,
      clientIds: { [other]: other },
    });
  });
});

describe.each(v1Protocols)("v1 group invites over %s", (protocol) => {
  let c: V1Client;
  const v2 = () => createClient(GroupInvitesService, transport());
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates with a code, lists without it, by group and by id, and deletes", async () => {
    const group = await newGroup(`invites-${protocol}`);
    const made = ok(
      await c.create(groupInvites, group, {
        ttl: "3600s",
        role: viewer.uid,
        email: "a@b.test",
        singleUse: true,
      }),
    );
    expect(made.code).not.toBe("");
    expect(made.role).toMatchObject({ id: viewer.uid, name: "viewer" });
    const id = made.id as string;
    const through2 = await v2().getGroupInvite({ uid: id });
    expect(through2).toMatchObject({
      uid: id,
      roleUid: viewer.uid,
      email: "a@b.test",
      singleUse: true,
    });
    const { seconds, nanos } = through2.expirationTime!;
    const expires = Number(seconds) * 1000 + Math.floor(nanos / 1e6);
    expect(new Date(made.expiration).getTime()).toBe(expires);

    const listed = ok(await c.list(groupInvites, [["group", group]]));
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toMatchObject({
      id,
      role: { id: viewer.uid },
      email: "a@b.test",
      singleUse: true,
    });
    expect(new Date(listed.items[0].expiration).getTime()).toBe(expires);
    expect(JSON.stringify(listed)).not.toContain(made.code);
    expect(ok(await c.list(groupInvites, [["id", id]])).items).toHaveLength(1);
    expect(ok(await c.list(groupInvites, [["id", `${group}/ffffffffffffffff`]]))).toEqual({
      items: [],
    });

    expect(ok(await c.delete(groupInvites, id))).toEqual({});
    expect(ok(await c.list(groupInvites, [["group", group]]))).toEqual({ items: [] });
  });

  it("shows an invite made through v2", async () => {
    const group = await newGroup(`invites2-${protocol}`);
    const i = await v2().createGroupInvite({ parent: group, groupInvite: { roleUid: viewer.uid } });
    const [item] = ok(await c.list(groupInvites, [["group", group]])).items;
    expect(item).toMatchObject({ id: i.uid, role: { id: viewer.uid }, singleUse: false });
  });
});
