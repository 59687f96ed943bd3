import { beforeAll, describe, expect, it } from "vitest";
import {
  failure,
  type IamClients,
  iamClients,
  protocols,
  transportFor,
} from "../helpers/iam-clients.js";
import { badRequestFields, type Json, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

const tenant = "0b9e1c2a-3f4d-4e5f-8a6b-7c8d9e0f1a2b";
const app = "11111111-2222-4333-8444-555555555555";

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("accounts");
});

describe.each(protocols)("account associations over %s", (protocol) => {
  let c: IamClients;
  let group: string;
  const newGroup = async (name: string, parent = group) =>
    (await c.groups.createGroup({ parent, group: { name } })).uid;
  beforeAll(async () => {
    c = iamClients(transportFor(protocol, ts.url, org.owner.headers));
    group = await newGroup(`a-${protocol}`, org.uid);
  });

  it("creates, reads, lists with paging, updates and deletes the association of a group", async () => {
    const created = await c.accountAssociations.createAccountAssociation({
      parent: group,
      accountAssociation: {
        name: "prod",
        amazon: { account: "123456789012" },
        github: { installationIds: [42n, 9007199254740993n] },
      },
    });
    expect(created).toMatchObject({
      uid: group,
      name: "prod",
      amazon: { account: "123456789012" },
      github: { installationIds: [42n, 9007199254740993n] },
    });
    expect(created.google).toBeUndefined();
    expect(await c.accountAssociations.getAccountAssociation({ uid: group })).toEqual(created);
    const again = await failure(
      c.accountAssociations.createAccountAssociation({
        parent: group,
        accountAssociation: { amazon: { account: "210987654321" } },
      }),
    );
    expect(again).toMatchObject({ code: 6, reason: "ALREADY_EXISTS" });

    for (const name of ["b", "c"]) {
      await c.accountAssociations.createAccountAssociation({
        parent: await newGroup(name),
        accountAssociation: { name, google: { projectId: "my-project", projectNumber: "42" } },
      });
    }
    // The group's own association is within its tree, as a resource of the group.
    const q = { uidp: { descendantsOf: group, childrenOf: "" }, pageSize: 2, orderBy: "name" };
    const first = await c.accountAssociations.listAccountAssociations(q);
    expect(first.accountAssociations.map((a) => a.name)).toEqual(["b", "c"]);
    expect(first.totalCount).toBe(3n);
    const second = await c.accountAssociations.listAccountAssociations({
      ...q,
      pageToken: first.nextPageToken!,
    });
    expect(second.accountAssociations.map((a) => a.name)).toEqual(["prod"]);
    expect(second.nextPageToken).toBeUndefined();

    // Without a mask: what is present changes, the other blocks stay.
    const linked = await c.accountAssociations.updateAccountAssociation({
      accountAssociation: { uid: group, azure: { tenantId: tenant, clientIds: [app] } },
    });
    expect(linked).toMatchObject({
      name: "prod",
      amazon: { account: "123456789012" },
      azure: { tenantId: tenant, clientIds: [app] },
    });
    // With a mask: a named block absent from the body is unlinked; others are ignored.
    const masked = await c.accountAssociations.updateAccountAssociation({
      accountAssociation: { uid: group, name: "ignored", description: "d" },
      updateMask: { paths: ["amazon", "description"] },
    });
    expect(masked).toMatchObject({ name: "prod", description: "d", azure: { tenantId: tenant } });
    expect(masked.amazon).toBeUndefined();
    const emptied = await failure(
      c.accountAssociations.updateAccountAssociation({
        accountAssociation: { uid: group },
        updateMask: { paths: ["*"] },
      }),
    );
    expect(emptied).toMatchObject({ code: 3, fields: ["accountAssociation"] });

    await c.accountAssociations.deleteAccountAssociation({ uid: group });
    expect(
      await failure(c.accountAssociations.getAccountAssociation({ uid: group })),
    ).toMatchObject({ code: 5 });
  });

  // [case, association body, failing fields]
  const invalid: [string, Record<string, unknown>, string[]][] = [
    ["no provider", { name: "x" }, ["accountAssociation"]],
    ["an 11-digit account", { amazon: { account: "12345678901" } }, ["amazon.account"]],
    ["a lettered account", { amazon: { account: "12345678901a" } }, ["amazon.account"]],
    [
      "a bad Google project",
      { google: { projectId: "My_Project", projectNumber: "x1" } },
      ["google.projectId", "google.projectNumber"],
    ],
    [
      "a short project id",
      { google: { projectId: "abcd1", projectNumber: "1" } },
      ["google.projectId"],
    ],
    [
      "a bad Azure tenant and client",
      { azure: { tenantId: "tenant", clientIds: [app, "nope"] } },
      ["azure.tenantId", "azure.clientIds"],
    ],
    ["a zero installation", { github: { installationIds: [0n] } }, ["github.installationIds"]],
    ["a negative installation", { github: { installationIds: [-5n] } }, ["github.installationIds"]],
    [
      "several bad blocks",
      { amazon: { account: "1" }, github: { installationIds: [] } },
      ["amazon.account", "github.installationIds"],
    ],
  ];
  it.each(invalid)("rejects %s", async (_case, accountAssociation, fields) => {
    const err = await failure(
      c.accountAssociations.createAccountAssociation({ parent: group, accountAssociation }),
    );
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", fields });
  });

  it("goes with its group", async () => {
    const leaf = await newGroup("leaf");
    await c.accountAssociations.createAccountAssociation({
      parent: leaf,
      accountAssociation: { amazon: { account: "123456789012" } },
    });
    await c.groups.deleteGroup({ uid: leaf });
    expect(await failure(c.accountAssociations.getAccountAssociation({ uid: leaf }))).toMatchObject(
      { code: 5 },
    );
  });
});

describe("account associations over REST", () => {
  const rest = (method: string, path: string, body?: unknown) =>
    restCall(ts.url, method, path, body, org.owner.headers);
  const group = async (name: string, parent = org.uid) =>
    (await rest("POST", `/iam/v2beta1/groups/${parent}`, { name })).json.uid as string;

  it("creates, reads, lists with paging, updates and deletes an association", async () => {
    const top = await group("rest");
    const g = await group("rest-1", top);
    const created = await rest("POST", `/iam/v2beta1/accountAssociations/${g}`, {
      name: "prod",
      github: { installationIds: ["7"] },
    });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ uid: g, github: { installationIds: ["7"] } });
    expect((await rest("GET", `/iam/v2beta1/accountAssociations/${g}`)).json).toEqual(created.json);
    const dup = await rest("POST", `/iam/v2beta1/accountAssociations/${g}`, {
      amazon: { account: "123456789012" },
    });
    expect(dup).toMatchObject({ status: 409, json: { code: 6 } });
    const g2 = await group("rest-2", top);
    await rest("POST", `/iam/v2beta1/accountAssociations/${g2}`, {
      name: "stage",
      amazon: { account: "123456789012" },
    });
    const page = (token = "") =>
      rest(
        "GET",
        `/iam/v2beta1/accountAssociations?uidp.descendantsOf=${top}&pageSize=1&orderBy=name&pageToken=${token}`,
      );
    const first = await page();
    expect(first.json.accountAssociations.map((a: Json) => a.name)).toEqual(["prod"]);
    expect(first.json.totalCount).toBe("2");
    const second = await page(first.json.nextPageToken);
    expect(second.json.accountAssociations.map((a: Json) => a.name)).toEqual(["stage"]);

    const described = await rest("PATCH", `/iam/v2beta1/accountAssociations/${g}`, {
      description: "d",
    });
    expect(described.json).toMatchObject({ name: "prod", description: "d", github: {} });
    const masked = await rest("PATCH", `/iam/v2beta1/accountAssociations/${g}?updateMask=google`, {
      google: { projectId: "my-project", projectNumber: "12" },
      name: "ignored",
    });
    expect(masked.json).toMatchObject({
      name: "prod",
      google: { projectId: "my-project", projectNumber: "12" },
      github: { installationIds: ["7"] },
    });
    expect((await rest("DELETE", `/iam/v2beta1/accountAssociations/${g}`)).json).toEqual({});
    expect((await rest("GET", `/iam/v2beta1/accountAssociations/${g}`)).status).toBe(404);
  });

  it("reports each failing field", async () => {
    const r = await rest("POST", `/iam/v2beta1/accountAssociations/${await group("bad")}`, {
      amazon: { account: "12" },
      azure: { tenantId: "x" },
    });
    expect(r.status).toBe(400);
    expect(badRequestFields(r.json)).toEqual(["amazon.account", "azure.tenantId"]);
  });
});
