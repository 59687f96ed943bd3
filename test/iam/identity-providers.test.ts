import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import {
  failure,
  type IamClients,
  iamClients,
  protocols,
  transportFor,
} from "../helpers/iam-clients.js";
import { badRequestFields, type Json, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
// Every client secret of this file starts so, to find any leak with one search.
const secretMark = "shh-idp-";
const oidc = (secret = `${secretMark}first`) => ({
  issuer: "https://login.example.com",
  clientId: "gatehouse",
  clientSecret: secret,
  additionalScopes: ["groups"],
  groupsClaim: "groups",
});

let org: TestOrg;
const logLines: string[] = [];
/** Every answer of the file, errors included, as JSON text: none may carry a secret. */
const answers: string[] = [];
const seen = <T>(x: T): T => {
  answers.push(JSON.stringify(x, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
  return x;
};

const ts = useTestServer(
  { GATEHOUSE_LOG_LEVEL: "debug" },
  { logStream: { write: (line) => void logLines.push(line) } },
);
beforeAll(async () => {
  org = await ts.makeOrg("idp");
});

describe.each(protocols)("identity providers over %s", (protocol) => {
  let c: IamClients;
  let group: string;
  beforeAll(async () => {
    c = iamClients(transportFor(protocol, ts.url, org.owner.headers));
    group = (await c.groups.createGroup({ parent: org.uid, group: { name: `p-${protocol}` } })).uid;
  });
  const fail = async (p: Promise<unknown>) => seen(await failure(p));

  it("creates, reads, lists with paging, updates and deletes a provider", async () => {
    const created = seen(
      await c.identityProviders.createIdentityProvider({
        parent: group,
        identityProvider: { name: "corp", defaultRole: viewer.uid, oidc: oidc() },
      }),
    );
    expect(created.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(created).toMatchObject({
      name: "corp",
      defaultRole: viewer.uid,
      oidc: { issuer: "https://login.example.com", clientId: "gatehouse", clientSecret: "" },
    });
    expect(seen(await c.identityProviders.getIdentityProvider({ uid: created.uid }))).toEqual(
      created,
    );
    for (const name of ["a-idp", "z-idp"]) {
      await c.identityProviders.createIdentityProvider({
        parent: group,
        identityProvider: { name, oidc: oidc(`${secretMark}${name}`) },
      });
    }
    const q = { uidp: { childrenOf: group, descendantsOf: "" }, pageSize: 2, orderBy: "name" };
    const first = seen(await c.identityProviders.listIdentityProviders(q));
    expect(first.identityProviders.map((p) => p.name)).toEqual(["a-idp", "corp"]);
    expect(first.totalCount).toBe(3n);
    const second = seen(
      await c.identityProviders.listIdentityProviders({ ...q, pageToken: first.nextPageToken! }),
    );
    expect(second.identityProviders.map((p) => p.name)).toEqual(["z-idp"]);
    expect(second.nextPageToken).toBeUndefined();

    // Without a mask: the fields present change; an oidc without a secret keeps the secret
    // while it points at the same client of the same issuer.
    const stored = () => ts.store.getIdentityProvider(created.uid);
    seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: created.uid, description: "staff", oidc: oidc("") },
      }),
    );
    expect((await stored())?.oidc.clientSecret).toBe(`${secretMark}first`);
    // Re-pointed at another client (or issuer) without a new secret: the old one is dropped,
    // never sent to where it does not belong.
    const renamed = seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: {
          uid: created.uid,
          description: "staff",
          oidc: { ...oidc(""), clientId: "gatehouse-2" },
        },
      }),
    );
    expect(renamed).toMatchObject({ name: "corp", description: "staff" });
    expect(renamed.oidc?.clientId).toBe("gatehouse-2");
    expect((await stored())?.oidc.clientSecret).toBe("");
    seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: created.uid, oidc: { issuer: "https://login2.example.com" } },
        updateMask: { paths: ["oidc.issuer"] },
      }),
    );
    expect((await stored())?.oidc.clientSecret).toBe("");
    // Re-pointed with a new secret in the same update: the new one is kept.
    seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: {
          uid: created.uid,
          oidc: { ...oidc(`${secretMark}first`), clientId: "gatehouse-2" },
        },
      }),
    );
    expect((await stored())?.oidc).toMatchObject({
      issuer: "https://login.example.com",
      clientSecret: `${secretMark}first`,
    });

    // With a mask: only what it names; a sub-path of oidc changes only that sub-field.
    const masked = seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: created.uid, name: "ignored", oidc: { groupsClaim: "roles" } },
        updateMask: { paths: ["oidc.groups_claim"] },
      }),
    );
    expect(masked).toMatchObject({ name: "corp", oidc: { clientId: "gatehouse-2" } });
    expect(masked.oidc?.groupsClaim).toBe("roles");
    expect((await stored())?.oidc.clientSecret).toBe(`${secretMark}first`);
    seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: created.uid, oidc: { clientSecret: `${secretMark}rotated` } },
        updateMask: { paths: ["oidc.client_secret"] },
      }),
    );
    expect((await stored())?.oidc).toMatchObject({
      clientId: "gatehouse-2",
      clientSecret: `${secretMark}rotated`,
    });
    // Full replacement from what a reader sees (no secret) keeps the secret too.
    seen(
      await c.identityProviders.updateIdentityProvider({
        identityProvider: { ...masked, uid: created.uid },
        updateMask: { paths: ["*"] },
      }),
    );
    expect((await stored())?.oidc.clientSecret).toBe(`${secretMark}rotated`);

    await c.identityProviders.deleteIdentityProvider({ uid: created.uid });
    expect(await fail(c.identityProviders.getIdentityProvider({ uid: created.uid }))).toMatchObject(
      { code: 5 },
    );
  });

  it("keeps declared email domains lowercase, changed alone through a mask", async () => {
    const made = await c.identityProviders.createIdentityProvider({
      parent: group,
      identityProvider: { name: "domains", oidc: oidc(), emailDomains: ["Corp.Example", "b.io"] },
    });
    expect(made.emailDomains).toEqual(["corp.example", "b.io"]);
    const kept = await c.identityProviders.updateIdentityProvider({
      identityProvider: { uid: made.uid, description: "d" },
      updateMask: { paths: ["description"] },
    });
    expect(kept.emailDomains).toEqual(["corp.example", "b.io"]);
    const changed = await c.identityProviders.updateIdentityProvider({
      identityProvider: { uid: made.uid, emailDomains: [] },
      updateMask: { paths: ["email_domains"] },
    });
    expect(changed.emailDomains).toEqual([]);
    await c.identityProviders.deleteIdentityProvider({ uid: made.uid });
  });

  // [case, provider body, failing fields]
  const invalid: [string, Record<string, unknown>, string[]][] = [
    ["no name", { name: "", oidc: oidc() }, ["name"]],
    ["no oidc", { name: "n" }, ["oidc.issuer", "oidc.clientId"]],
    [
      "an http issuer",
      { name: "n", oidc: { ...oidc(), issuer: "http://idp.test" } },
      ["oidc.issuer"],
    ],
    [
      "an issuer with a query",
      { name: "n", oidc: { ...oidc(), issuer: "https://i.test/?a=b" } },
      ["oidc.issuer"],
    ],
    ["no client id", { name: "n", oidc: { ...oidc(), clientId: "" } }, ["oidc.clientId"]],
    [
      "a NUL in the client id and secret",
      { name: "n", oidc: { ...oidc(), clientId: "a\u0000b", clientSecret: "s\u0000" } },
      ["oidc.clientId", "oidc.clientSecret"],
    ],
    [
      "a scope with a space",
      { name: "n", oidc: { ...oidc(), additionalScopes: ["a b"] } },
      ["oidc.additionalScopes"],
    ],
    ["a malformed role", { name: "n", defaultRole: "admin", oidc: oidc() }, ["defaultRole"]],
    [
      "a domain that is no DNS name",
      { name: "n", oidc: oidc(), emailDomains: ["a@b.com"] },
      ["emailDomains"],
    ],
    [
      "a one-label domain",
      { name: "n", oidc: oidc(), emailDomains: ["localhost"] },
      ["emailDomains"],
    ],
    [
      "a domain twice",
      { name: "n", oidc: oidc(), emailDomains: ["a.com", "A.com"] },
      ["emailDomains"],
    ],
    [
      "21 domains",
      { name: "n", oidc: oidc(), emailDomains: Array.from({ length: 21 }, (_, i) => `d${i}.com`) },
      ["emailDomains"],
    ],
    [
      "an unknown role",
      { name: "n", defaultRole: `${"0".repeat(40)}/0000000000000000`, oidc: oidc() },
      ["defaultRole"],
    ],
  ];
  it.each(invalid)("rejects %s", async (_case, identityProvider, fields) => {
    const err = await fail(
      c.identityProviders.createIdentityProvider({ parent: group, identityProvider }),
    );
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", fields });
  });

  it.each([
    "http://127.0.0.1:9/",
    "https://10.1.2.3",
    "https://169.254.169.254/latest",
    "https://[::1]:8443",
    "https://[::ffff:192.168.0.1]",
    "https://localhost",
  ])(
    "refuses the private or loopback issuer %s (no GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES)",
    async (issuer) => {
      const err = await fail(
        c.identityProviders.createIdentityProvider({
          parent: group,
          identityProvider: { name: "local", oidc: { ...oidc(), issuer } },
        }),
      );
      expect(err).toMatchObject({ code: 3, fields: ["oidc.issuer"] });
      expect(err.message).toMatch(/private or loopback/);
    },
  );

  it.each([
    [
      "a /.well-known/ document",
      "https://idp.test/.well-known/openid-configuration",
      /\.well-known/,
    ],
    ["a /.well-known/ path", "https://idp.test/tenant/.well-known/x", /\.well-known/],
    ["a fragment", "https://idp.test/#x", /fragment/],
    ["an empty query", "https://idp.test/?", /query/],
  ])("refuses an issuer with %s, saying why", async (_case, issuer, why) => {
    const err = await fail(
      c.identityProviders.createIdentityProvider({
        parent: group,
        identityProvider: { name: "wk", oidc: { ...oidc(), issuer } },
      }),
    );
    expect(err).toMatchObject({ code: 3, fields: ["oidc.issuer"] });
    expect(err.message).toMatch(why);
    const created = seen(
      await c.identityProviders.createIdentityProvider({
        parent: group,
        identityProvider: { name: "wk2", oidc: oidc() },
      }),
    );
    try {
      const upd = await fail(
        c.identityProviders.updateIdentityProvider({
          identityProvider: { uid: created.uid, oidc: { issuer } },
          updateMask: { paths: ["oidc.issuer"] },
        }),
      );
      expect(upd).toMatchObject({ code: 3, fields: ["oidc.issuer"] });
    } finally {
      await c.identityProviders.deleteIdentityProvider({ uid: created.uid });
    }
  });

  it("refuses a default role defined beside the group", async () => {
    const beside = (
      await c.groups.createGroup({ parent: org.uid, group: { name: `side-${protocol}` } })
    ).uid;
    const role = await c.roles.createRole({
      parent: beside,
      role: { name: "side", capabilities: ["groups.list"] },
    });
    const err = await fail(
      c.identityProviders.createIdentityProvider({
        parent: group,
        identityProvider: { name: "n", defaultRole: role.uid, oidc: oidc() },
      }),
    );
    expect(err).toMatchObject({ code: 3, fields: ["defaultRole"] });
  });

  it("needs role_bindings.create and every capability of the default role", async () => {
    const writer = await c.roles.createRole({
      parent: group,
      role: { name: "idp-writer", capabilities: ["identity_providers.create", "groups.list"] },
    });
    const granter = await c.roles.createRole({
      parent: group,
      role: {
        name: "idp-granter",
        capabilities: [
          "identity_providers.create",
          "identity_providers.update",
          "role_bindings.create",
          "groups.list",
        ],
      },
    });
    const asWriter = iamClients(
      transportFor(protocol, ts.url, (await ts.makeIdentity(group, [writer.uid])).headers),
    );
    const asGranter = iamClients(
      transportFor(protocol, ts.url, (await ts.makeIdentity(group, [granter.uid])).headers),
    );
    const body = (defaultRole: string) => ({
      parent: group,
      identityProvider: { name: "n", defaultRole, oidc: oidc() },
    });
    expect(await fail(asWriter.identityProviders.createIdentityProvider(body("")))).toMatchObject({
      code: 7,
    });
    expect(
      await fail(asGranter.identityProviders.createIdentityProvider(body(ownerRole.uid))),
    ).toMatchObject({ code: 7 });
    const made = seen(await asGranter.identityProviders.createIdentityProvider(body(writer.uid)));
    expect(
      await fail(
        asGranter.identityProviders.updateIdentityProvider({
          identityProvider: { uid: made.uid, defaultRole: viewer.uid },
        }),
      ),
    ).toMatchObject({ code: 7 });
    await c.identityProviders.deleteIdentityProvider({ uid: made.uid });
  });

  it("blocks the delete of its group", async () => {
    const leaf = (await c.groups.createGroup({ parent: group, group: { name: "leaf" } })).uid;
    const p = await c.identityProviders.createIdentityProvider({
      parent: leaf,
      identityProvider: { name: "n", oidc: oidc() },
    });
    const err = await fail(c.groups.deleteGroup({ uid: leaf }));
    expect(err).toMatchObject({ code: 9, preconditions: ["RESOURCE_NOT_EMPTY"] });
    expect(err.message).toBe(
      "Precondition failed: cannot delete group with child identityProviders",
    );
    await c.identityProviders.deleteIdentityProvider({ uid: p.uid });
    await c.groups.deleteGroup({ uid: leaf });
  });
});

describe("identity providers over REST", () => {
  const rest = async (method: string, path: string, body?: unknown) => {
    const r = await restCall(ts.url, method, path, body, org.owner.headers);
    seen(r.json);
    return r;
  };
  let group: string;
  beforeAll(async () => {
    group = (await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "rest" })).json.uid;
  });

  it("creates, reads, lists with paging, updates and deletes a provider", async () => {
    const created = await rest("POST", `/iam/v2beta1/identityProviders/${group}`, {
      name: "corp",
      defaultRole: viewer.uid,
      oidc: oidc(),
    });
    expect(created.status).toBe(200);
    // The input-only secret is left out of the answer entirely, not even as "".
    expect(created.json.oidc).toEqual({
      issuer: "https://login.example.com",
      clientId: "gatehouse",
      additionalScopes: ["groups"],
      groupsClaim: "groups",
    });
    const uid = created.json.uid as string;
    expect((await rest("GET", `/iam/v2beta1/identityProviders/${uid}`)).json).toEqual(created.json);
    await rest("POST", `/iam/v2beta1/identityProviders/${group}`, { name: "other", oidc: oidc() });
    const page = (token = "") =>
      rest(
        "GET",
        `/iam/v2beta1/identityProviders?uidp.childrenOf=${group}&pageSize=1&orderBy=name&pageToken=${token}`,
      );
    const first = await page();
    expect(first.json.identityProviders.map((p: Json) => p.name)).toEqual(["corp"]);
    expect(first.json.totalCount).toBe("2");
    const second = await page(first.json.nextPageToken);
    expect(second.json.identityProviders.map((p: Json) => p.name)).toEqual(["other"]);

    // No updateMask: the JSON keys present change.
    const described = await rest("PATCH", `/iam/v2beta1/identityProviders/${uid}`, {
      description: "staff",
    });
    expect(described.json).toMatchObject({ name: "corp", description: "staff" });
    const masked = await rest(
      "PATCH",
      `/iam/v2beta1/identityProviders/${uid}?updateMask=oidc.clientSecret,name`,
      { name: "corp-2", description: "ignored", oidc: { clientSecret: `${secretMark}rest` } },
    );
    expect(masked.json).toMatchObject({ name: "corp-2", description: "staff" });
    expect((await ts.store.getIdentityProvider(uid))?.oidc.clientSecret).toBe(`${secretMark}rest`);
    expect((await rest("DELETE", `/iam/v2beta1/identityProviders/${uid}`)).json).toEqual({});
    expect((await rest("GET", `/iam/v2beta1/identityProviders/${uid}`)).status).toBe(404);
  });

  it("reports each failing field", async () => {
    const r = await rest("POST", `/iam/v2beta1/identityProviders/${group}`, {
      name: "",
      oidc: { issuer: "ftp://x", clientSecret: `${secretMark}bad` },
    });
    expect(r.status).toBe(400);
    expect(badRequestFields(r.json)).toEqual(["name", "oidc.issuer", "oidc.clientId"]);
  });
});

describe("the client secret", () => {
  it("never appears in an answer or a log line", () => {
    expect(answers.length).toBeGreaterThan(20);
    for (const a of answers) expect(a).not.toContain(secretMark);
    // The capture works: debug logging of the requests above reached it.
    expect(logLines.length).toBeGreaterThan(20);
    for (const line of logLines) expect(line).not.toContain(secretMark);
  });
});
