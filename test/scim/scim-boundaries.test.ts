import { describe, expect, it } from "vitest";
import { listOrder } from "../helpers/list-order.js";
import { restCall } from "../helpers/rest-client.js";
import { backends, useTestServer } from "../helpers/test-server.js";
import { connectScim, scimClient, scimFetch } from "./scim-client.js";
import { okta } from "./scim-fixtures.js";

const errorSchema = "urn:ietf:params:scim:api:messages:2.0:Error";
const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
const patchOp = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const searchRequest = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

describe.each(backends)("SCIM across organizations on %s", (backend) => {
  const gh = useTestServer({}, { backend });

  it("one organization's SCIM token sees nothing of another's, and is no API token", async () => {
    const a = await gh.makeOrg("scim-a");
    const b = await gh.makeOrg("scim-b");
    const scimA = await connectScim(gh, a.uid, a.owner.uid);
    const scimB = await connectScim(gh, b.uid, b.owner.uid);
    const bob = await scimB.send(okta.create());
    expect(bob.status).toBe(201);
    const bobId = bob.json.id as string;

    // A's token on B's URL: the same 401 as no token at all, for every path and method.
    const aOnB = scimClient(gh, b.uid, scimA.token);
    const noToken = await scimFetch(scimB.base, undefined, { method: "GET", path: "/Users" });
    expect(noToken.status).toBe(401);
    for (const step of [
      { method: "GET", path: "/Users" },
      okta.get(bobId),
      okta.deactivate(bobId),
      { method: "DELETE", path: `/Users/${bobId}` },
      { method: "GET", path: "/ServiceProviderConfig" },
      { method: "GET", path: "/Nowhere" },
      { method: "POST", path: "/Users/.search", body: { schemas: [searchRequest] } },
      { method: "POST", path: "/.search", body: { schemas: [searchRequest] } },
    ] as const) {
      const res = await aOnB.send(step);
      expect(res.status).toBe(401);
      expect(res.json).toEqual(noToken.json);
      expect(res.json.schemas).toEqual([errorSchema]);
    }
    // A's own URL does not have B's user, by id or by filter.
    expect((await scimA.send(okta.get(bobId))).status).toBe(404);
    expect((await scimA.send(okta.lookup("test.user@okta.local"))).json.totalResults).toBe(0);
    expect((await scimA.send({ method: "GET", path: "/Users" })).json.totalResults).toBe(0);
    const searched = await scimA.send({
      method: "POST",
      path: "/.search",
      body: { schemas: [searchRequest] },
    });
    expect(searched.json.totalResults).toBe(0);
    // B's user is untouched.
    expect((await scimB.send(okta.get(bobId))).json.active).toBe(true);

    // A SCIM token is not an API token, and an API token (even the owner's) is no SCIM token.
    const api = await restCall(gh.url, "GET", `/iam/v2beta1/groups/${a.uid}`, undefined, {
      authorization: `Bearer ${scimA.token}`,
    });
    expect(api.status).toBe(401);
    const owner = scimClient(gh, a.uid, a.owner.token);
    expect((await owner.send({ method: "GET", path: "/Users" })).status).toBe(401);
  });

  it("a rotated token replaces the old one, and a revoked one ends the connection", async () => {
    const org = await gh.makeOrg("scim-rotate");
    const first = await connectScim(gh, org.uid, org.owner.uid);
    expect((await first.send({ method: "GET", path: "/Users" })).status).toBe(200);
    const second = await connectScim(gh, org.uid, org.owner.uid);
    expect((await first.send({ method: "GET", path: "/Users" })).status).toBe(401);
    expect((await second.send({ method: "GET", path: "/Users" })).status).toBe(200);
    await gh.store.deleteScimConnection(org.uid);
    expect((await second.send({ method: "GET", path: "/Users" })).status).toBe(401);
  });
});

describe("SCIM refusals", () => {
  const gh = useTestServer({ GATEHOUSE_SCIM_RATE_LIMIT: "1000/1s" });
  let scim: Awaited<ReturnType<typeof connectScim>>;
  let id: string;

  it("answers discovery with the documented resources", async () => {
    const org = await gh.makeOrg("scim-errors");
    scim = await connectScim(gh, org.uid, org.owner.uid);
    const config = await scim.send({ method: "GET", path: "/ServiceProviderConfig" });
    expect(config.status).toBe(200);
    expect(config.type).toMatch(/^application\/scim\+json/);
    expect(config.json).toMatchObject({
      patch: { supported: true },
      filter: { supported: true },
      etag: { supported: true },
      bulk: { supported: false },
    });
    const types = await scim.send({ method: "GET", path: "/ResourceTypes" });
    expect(types.json.Resources.map((r: { id: string }) => r.id)).toContain("User");
    const user = await scim.send({ method: "GET", path: `/Schemas/${userSchema}` });
    expect(user.json.attributes.map((a: { name: string }) => a.name)).toContain("userName");
    id = (await scim.send(okta.create())).json.id;
  });

  const bad: [string, () => Parameters<typeof scim.send>[0], number, string | undefined][] = [
    [
      "a filter that does not parse",
      () => ({ method: "GET", path: `/Users?filter=${encodeURIComponent("userName eq")}` }),
      400,
      "invalidFilter",
    ],
    [
      "a filter on no attribute",
      () => ({ method: "GET", path: `/Users?filter=${encodeURIComponent('shoeSize eq "9"')}` }),
      400,
      "invalidFilter",
    ],
    [
      "a count that is no integer",
      () => ({ method: "GET", path: "/Users?count=many" }),
      400,
      "invalidValue",
    ],
    [
      "a body without schemas",
      () => ({ method: "POST", path: "/Users", body: { userName: "x" } }),
      400,
      "invalidSyntax",
    ],
    [
      "a user without userName",
      () => ({ method: "POST", path: "/Users", body: { schemas: [userSchema] } }),
      400,
      "invalidValue",
    ],
    [
      "a userName of the wrong type",
      () => ({ method: "POST", path: "/Users", body: { schemas: [userSchema], userName: 7 } }),
      400,
      "invalidValue",
    ],
    [
      "active that is no boolean",
      () => ({
        method: "POST",
        path: "/Users",
        body: { schemas: [userSchema], userName: "y", active: "maybe" },
      }),
      400,
      "invalidValue",
    ],
    [
      "a body that is a list",
      () => ({ method: "POST", path: "/Users", body: [] }),
      400,
      "invalidSyntax",
    ],
    [
      "a PATCH without the PatchOp schema",
      () => ({ method: "PATCH", path: `/Users/${id}`, body: { Operations: [] } }),
      400,
      "invalidSyntax",
    ],
    [
      "a PATCH of an unknown op",
      () => ({
        method: "PATCH",
        path: `/Users/${id}`,
        body: { schemas: [patchOp], Operations: [{ op: "move", path: "title", value: "x" }] },
      }),
      400,
      "invalidSyntax",
    ],
    [
      "a PATCH path that does not parse",
      () => ({
        method: "PATCH",
        path: `/Users/${id}`,
        body: {
          schemas: [patchOp],
          Operations: [{ op: "replace", path: "emails[type eq", value: "x" }],
        },
      }),
      400,
      "invalidPath",
    ],
    [
      "a remove without a path",
      () => ({
        method: "PATCH",
        path: `/Users/${id}`,
        body: { schemas: [patchOp], Operations: [{ op: "remove" }] },
      }),
      400,
      "noTarget",
    ],
    [
      "a PATCH of a read-only attribute",
      () => ({
        method: "PATCH",
        path: `/Users/${id}`,
        body: {
          schemas: [patchOp],
          Operations: [{ op: "add", path: "groups", value: [{ value: "x" }] }],
        },
      }),
      400,
      "mutability",
    ],
    [
      "a PATCH that removes userName",
      () => ({
        method: "PATCH",
        path: `/Users/${id}`,
        body: { schemas: [patchOp], Operations: [{ op: "remove", path: "userName" }] },
      }),
      400,
      "invalidValue",
    ],
    ["an unknown user", () => ({ method: "GET", path: "/Users/nobody" }), 404, undefined],
    ["an unknown endpoint", () => ({ method: "GET", path: "/Bulk" }), 404, undefined],
  ];

  it.each(bad)("refuses %s with a SCIM error", async (_what, step, status, scimType) => {
    const res = await scim.send(step());
    expect(res.status).toBe(status);
    expect(res.type).toMatch(/^application\/scim\+json/);
    expect(res.json).toMatchObject({ schemas: [errorSchema], status: String(status) });
    expect(res.json.scimType).toBe(scimType);
  });

  it("refuses a body that is not JSON (400) or too large (413), and a stale ETag (412)", async () => {
    const notJson = await fetch(`${scim.base}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${scim.token}`, "content-type": "application/scim+json" },
      body: "{not json",
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ scimType: "invalidSyntax" });
    const huge = await fetch(`${scim.base}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${scim.token}`, "content-type": "application/scim+json" },
      body: JSON.stringify({
        schemas: [userSchema],
        userName: "z",
        title: "x".repeat(2 * 1024 * 1024),
      }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ schemas: [errorSchema], status: "413" });
    const form = await fetch(`${scim.base}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${scim.token}`, "content-type": "text/plain" },
      body: "userName=x",
    });
    expect(form.status).toBe(415);
    expect(await form.json()).toMatchObject({ schemas: [errorSchema], status: "415" });
    const stale = await scim.send(okta.deactivate(id), { "if-match": 'W/"999"' });
    expect(stale.status).toBe(412);
    const current = await scim.send(okta.get(id));
    const fresh = await scim.send(okta.put(id), { "if-match": current.etag! });
    expect(fresh.status).toBe(200);
  });

  it("pages and filters: startIndex, count, co, sw, pr, and, or on userName, externalId, displayName, emails.value", async () => {
    const made: { uid: string; createTime: string; userName: string }[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      const res = await scim.send({
        method: "POST",
        path: "/Users",
        body: {
          schemas: [userSchema],
          userName: `pager-${n}@example.com`,
          externalId: `ext-${n}`,
          displayName: n % 2 ? "Odd Person" : "Even Person",
          emails: [{ value: `pager-${n}@mail.example`, primary: true }],
        },
      });
      expect(res.status).toBe(201);
      made.push({
        uid: res.json.id,
        createTime: res.json.meta.created,
        userName: res.json.userName,
      });
    }
    const q = async (filter: string, extra = "") =>
      (
        await scim.send({
          method: "GET",
          path: `/Users?filter=${encodeURIComponent(filter)}${extra}`,
        })
      ).json;
    expect((await q('userName sw "pager-"')).totalResults).toBe(5);
    const page = await q('userName sw "pager-"', "&startIndex=2&count=2");
    expect(page).toMatchObject({ totalResults: 5, startIndex: 2, itemsPerPage: 2 });
    // Users are listed by when they were made, those of one millisecond by id.
    expect(page.Resources.map((r: { userName: string }) => r.userName)).toEqual(
      listOrder(made)
        .slice(1, 3)
        .map((u) => u.userName),
    );
    expect((await q('displayName eq "odd person"')).totalResults).toBe(3);
    expect((await q('emails.value co "-4@mail"')).totalResults).toBe(1);
    expect((await q('externalId eq "ext-2" or externalId eq "ext-5"')).totalResults).toBe(2);
    // externalId is caseExact: EXT-2 is another id.
    expect((await q('externalId eq "EXT-2"')).totalResults).toBe(0);
    expect((await q('userName sw "pager-" and displayName co "Even"')).totalResults).toBe(2);
    expect((await q('externalId pr and userName sw "pager-1"')).totalResults).toBe(1);
    const zero = await scim.send({ method: "GET", path: "/Users?count=0" });
    expect(zero.json.Resources).toEqual([]);
    expect(zero.json.totalResults).toBeGreaterThanOrEqual(6);
    const trimmed = await scim.send({
      method: "GET",
      path: `/Users?filter=${encodeURIComponent('externalId eq "ext-1"')}&excludedAttributes=emails,name`,
    });
    expect(trimmed.json.Resources[0].emails).toBeUndefined();
    expect(trimmed.json.Resources[0].id).toBeDefined();
  });
});
