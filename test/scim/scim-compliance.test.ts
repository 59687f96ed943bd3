import { beforeAll, describe, expect, it } from "vitest";
import { backends, useTestServer } from "../helpers/test-server.js";
import { connectScim, type Json, type ScimClient, scimFetch } from "./scim-client.js";

// RFC 7643 and RFC 7644's MUSTs, walked one section at a time against an organization's SCIM
// URL with fetch, as a directory calls it. Each test names the section it checks. (A run of
// scim2-tester, the python-scim project's compliance checker, found what these pin: reference
// attributes without referenceTypes, a PATCH whose path is an extension's URN ignored, and no
// POST /.search.)

const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
const groupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group";
const enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const errorSchema = "urn:ietf:params:scim:api:messages:2.0:Error";
const listSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const patchOp = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const searchRequest = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

describe.each(backends)("SCIM compliance (RFC 7643, RFC 7644) on %s", (backend) => {
  const gh = useTestServer({}, { backend });
  let scim: ScimClient;
  const ids: Record<string, string> = {};

  const get = (path: string) => scim.send({ method: "GET", path });
  const patch = (id: string, ...Operations: unknown[]) =>
    scim.send({
      method: "PATCH",
      path: `/Users/${id}`,
      body: { schemas: [patchOp], Operations },
    });
  /** A SCIM error answer: the status (as a string in the body), the scimType if one. */
  function expectError(
    res: { status: number; json: Json; type: string | null },
    status: number,
    scimType?: string,
  ) {
    expect(res.status, JSON.stringify(res.json)).toBe(status);
    expect(res.type).toMatch(/^application\/scim\+json/);
    expect(res.json.schemas).toEqual([errorSchema]);
    expect(res.json.status).toBe(String(status));
    if (scimType) expect(res.json.scimType).toBe(scimType);
    expect(typeof res.json.detail).toBe("string");
  }

  beforeAll(async () => {
    const org = await gh.makeOrg("compliance");
    scim = await connectScim(gh, org.uid, org.owner.uid);
    for (const [name, externalId] of [
      ["Alice.Smith@Corp.example", "Ext-A"],
      ["bob@corp.example", "ext-b"],
      ["carol@other.example", "ext-c"],
    ] as const) {
      const res = await scim.send({
        method: "POST",
        path: "/Users",
        body: {
          schemas: [userSchema],
          userName: name,
          externalId,
          emails: [{ value: name.toLowerCase(), type: "work", primary: true }],
          title: "Engineer",
        },
      });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      ids[name] = res.json.id;
    }
  });

  it("RFC 7644 4 and RFC 7643 5: /ServiceProviderConfig says what is supported", async () => {
    const res = await get("/ServiceProviderConfig");
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/scim\+json/);
    const c = res.json;
    expect(c.schemas).toEqual(["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"]);
    for (const feature of ["patch", "bulk", "filter", "changePassword", "sort", "etag"]) {
      expect(typeof c[feature].supported, feature).toBe("boolean");
    }
    expect(c.filter.maxResults).toBeGreaterThan(0);
    expect(c.authenticationSchemes.length).toBeGreaterThan(0);
    for (const s of c.authenticationSchemes) {
      expect(typeof s.type).toBe("string");
      expect(typeof s.name).toBe("string");
      expect(typeof s.description).toBe("string");
    }
  });

  it("RFC 7644 4 and RFC 7643 6: /ResourceTypes lists User and Group with their schemas", async () => {
    const res = await get("/ResourceTypes");
    expect(res.status).toBe(200);
    expect(res.json.schemas).toEqual([listSchema]);
    const byId = Object.fromEntries(res.json.Resources.map((r: Json) => [r.id, r]));
    expect(byId.User).toMatchObject({ name: "User", endpoint: "/Users", schema: userSchema });
    expect(byId.User.schemaExtensions).toEqual([{ schema: enterprise, required: false }]);
    expect(byId.Group).toMatchObject({ name: "Group", endpoint: "/Groups", schema: groupSchema });
    expect(res.json.totalResults).toBe(res.json.Resources.length);
    expect((await get("/ResourceTypes/User")).json.id).toBe("User");
    expectError(await get("/ResourceTypes/Nobody"), 404);
  });

  it("RFC 7643 7: every attribute of /Schemas has its characteristics, references their types", async () => {
    const res = await get("/Schemas");
    expect(res.status).toBe(200);
    const ids = res.json.Resources.map((s: Json) => s.id);
    expect(ids).toEqual(expect.arrayContaining([userSchema, groupSchema, enterprise]));
    expect(res.json.totalResults).toBe(res.json.Resources.length);
    const check = (a: Json, where: string) => {
      for (const key of [
        "name",
        "type",
        "multiValued",
        "description",
        "required",
        "caseExact",
        "mutability",
        "returned",
        "uniqueness",
      ]) {
        expect(a[key], `${where}.${key}`).toBeDefined();
      }
      expect([
        "string",
        "boolean",
        "decimal",
        "integer",
        "dateTime",
        "binary",
        "reference",
        "complex",
      ]).toContain(a.type);
      if (a.type === "complex") expect(a.subAttributes?.length, where).toBeGreaterThan(0);
      if (a.type === "reference")
        expect(a.referenceTypes?.length, `${where}.referenceTypes`).toBeGreaterThan(0);
      for (const sub of a.subAttributes ?? []) check(sub, `${where}.${sub.name}`);
    };
    for (const s of res.json.Resources) {
      expect(s.schemas).toEqual(["urn:ietf:params:scim:schemas:core:2.0:Schema"]);
      for (const a of s.attributes) check(a, `${s.id}:${a.name}`);
    }
    const user = (await get(`/Schemas/${userSchema}`)).json;
    const userName = user.attributes.find((a: Json) => a.name === "userName");
    expect(userName).toMatchObject({ required: true, caseExact: false, uniqueness: "server" });
    expectError(await get("/Schemas/urn:example:nothing"), 404);
  });

  it("RFC 7644 3.4.2.2: attribute names in a filter are case-insensitive, userName's value too (caseExact false), externalId's not", async () => {
    const total = async (filter: string) => {
      const res = await get(`/Users?filter=${encodeURIComponent(filter)}`);
      expect(res.status, `${filter}: ${JSON.stringify(res.json)}`).toBe(200);
      expect(res.json.schemas).toEqual([listSchema]);
      return res.json.totalResults as number;
    };
    expect(await total('userName eq "alice.smith@corp.example"')).toBe(1);
    expect(await total('USERNAME eq "ALICE.SMITH@CORP.EXAMPLE"')).toBe(1);
    expect(await total('username sw "ALICE"')).toBe(1);
    expect(await total('externalId eq "Ext-A"')).toBe(1);
    expect(await total('externalId eq "ext-a"')).toBe(0);
    expect(await total('EXTERNALID eq "ext-b"')).toBe(1);
    expect(await total('emails.value co "@corp.example"')).toBe(2);
    expect(await total('emails[type eq "work"].value ew "other.example"')).toBe(1);
    expect(await total('title pr and userName ew "corp.example"')).toBe(2);
    expect(await total('userName eq "bob@corp.example" or externalId eq "ext-c"')).toBe(2);
    expect(await total('not (userName eq "bob@corp.example")')).toBe(2);
    expectError(
      await get(`/Users?filter=${encodeURIComponent("userName eq")}`),
      400,
      "invalidFilter",
    );
    expectError(
      await get(`/Users?filter=${encodeURIComponent('shoeSize eq "9"')}`),
      400,
      "invalidFilter",
    );
  });

  it("RFC 7644 3.4.2.4: startIndex below 1 is 1, count 0 answers the total only, a negative count is 0, a count over the most is cut", async () => {
    const page = async (query: string) => {
      const res = await get(`/Users?${query}`);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return res.json;
    };
    const all = await page("");
    expect(all.totalResults).toBe(3);
    expect(all.startIndex).toBe(1);
    expect(all.itemsPerPage).toBe(3);
    expect((await page("startIndex=0")).startIndex).toBe(1);
    expect((await page("startIndex=-5&count=1")).Resources.map((r: Json) => r.id)).toEqual([
      all.Resources[0].id,
    ]);
    const counted = await page("count=0");
    expect(counted).toMatchObject({ totalResults: 3, itemsPerPage: 0, Resources: [] });
    expect((await page("count=-1")).itemsPerPage).toBe(0);
    expect((await page("count=100000")).itemsPerPage).toBe(3);
    const second = await page("startIndex=2&count=1");
    expect(second).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(second.Resources[0].id).toBe(all.Resources[1].id);
    expect(await page("startIndex=10")).toMatchObject({ totalResults: 3, itemsPerPage: 0 });
    expectError(await get("/Users?count=many"), 400, "invalidValue");
  });

  it("RFC 7644 3.4.2.5: attributes and excludedAttributes pick what is returned; id always is", async () => {
    const id = ids["bob@corp.example"]!;
    const only = (await get(`/Users/${id}?attributes=userName`)).json;
    expect(Object.keys(only).sort()).toEqual(["id", "meta", "schemas", "userName"]);
    const without = (await get(`/Users/${id}?excludedAttributes=emails,title`)).json;
    expect(without.emails).toBeUndefined();
    expect(without.title).toBeUndefined();
    expect(without.userName).toBe("bob@corp.example");
  });

  it("RFC 7644 3.4.3: a query sent with POST /.search answers as the GET, at a type or at the root", async () => {
    const body = {
      schemas: [searchRequest],
      filter: 'userName eq "BOB@corp.example"',
      attributes: ["userName"],
      startIndex: 1,
      count: 10,
    };
    const at = await scim.send({ method: "POST", path: "/Users/.search", body });
    expect(at.status, JSON.stringify(at.json)).toBe(200);
    expect(at.json).toMatchObject({ schemas: [listSchema], totalResults: 1 });
    expect(Object.keys(at.json.Resources[0]).sort()).toEqual(["id", "meta", "schemas", "userName"]);
    const group = await scim.send({
      method: "POST",
      path: "/Groups",
      body: { schemas: [groupSchema], displayName: "Searchers" },
    });
    expect(group.status).toBe(201);
    const root = await scim.send({
      method: "POST",
      path: "/.search",
      body: { schemas: [searchRequest], filter: 'displayName eq "Searchers"' },
    });
    expect(root.status, JSON.stringify(root.json)).toBe(200);
    expect(root.json.Resources.map((r: Json) => r.id)).toEqual([group.json.id]);
    const everything = await scim.send({
      method: "POST",
      path: "/.search",
      body: { schemas: [searchRequest] },
    });
    expect(everything.json.totalResults).toBe(4);
    expectError(
      await scim.send({ method: "POST", path: "/Users/.search", body: { filter: "x" } }),
      400,
      "invalidSyntax",
    );
    expectError(
      await scim.send({
        method: "POST",
        path: "/.search",
        body: { schemas: [searchRequest], filter: 'shoeSize eq "9"' },
      }),
      400,
      "invalidFilter",
    );
  });

  it("RFC 7644 3.5.2: PATCH errors carry their scimType: noTarget, invalidPath, invalidValue, mutability", async () => {
    const id = ids["carol@other.example"]!;
    expectError(await patch(id, { op: "remove" }), 400, "noTarget");
    expectError(
      await patch(id, { op: "replace", path: "name..x", value: "y" }),
      400,
      "invalidPath",
    );
    expectError(
      await patch(id, { op: "replace", path: "name.shoeSize", value: "9" }),
      400,
      "invalidPath",
    );
    expectError(await patch(id, { op: "replace", path: "title", value: 42 }), 400, "invalidValue");
    expectError(
      await patch(id, { op: "replace", path: "active", value: "perhaps" }),
      400,
      "invalidValue",
    );
    expectError(
      await patch(id, { op: "add", path: "groups", value: [{ value: "x" }] }),
      400,
      "mutability",
    );
    expectError(
      await patch(id, {
        op: "replace",
        path: 'emails[value pr and type eq "home"].display',
        value: "x",
      }),
      400,
      "noTarget",
    );
    expectError(await patch(id, { op: "move", path: "title", value: "x" }), 400, "invalidSyntax");
    // Nothing of a refused PATCH was applied.
    expect((await get(`/Users/${id}`)).json.title).toBe("Engineer");
  });

  it("RFC 7644 3.5.2.1-3: a PATCH whose path is an extension's URN adds, replaces and removes the extension", async () => {
    const id = ids["carol@other.example"]!;
    const added = await patch(id, {
      op: "add",
      path: enterprise,
      value: { employeeNumber: "701", department: "Tools" },
    });
    expect(added.status, JSON.stringify(added.json)).toBe(200);
    expect(added.json[enterprise]).toEqual({ employeeNumber: "701", department: "Tools" });
    expect(added.json.schemas).toContain(enterprise);
    const replaced = await patch(id, {
      op: "replace",
      path: enterprise,
      value: { department: "Platform" },
    });
    // Sub-attributes not given stay (3.5.2.3).
    expect(replaced.json[enterprise]).toEqual({ employeeNumber: "701", department: "Platform" });
    const removed = await patch(id, { op: "remove", path: enterprise });
    expect(removed.json[enterprise]).toBeUndefined();
    expect(removed.json.schemas).toEqual([userSchema]);
  });

  it("RFC 7644 3.5.1: PUT replaces the whole resource: what it leaves out is gone", async () => {
    const made = await scim.send({
      method: "POST",
      path: "/Users",
      body: { schemas: [userSchema], userName: "put@corp.example", title: "Chief", nickName: "P" },
    });
    expect(made.status).toBe(201);
    const put = await scim.send({
      method: "PUT",
      path: `/Users/${made.json.id}`,
      body: { schemas: [userSchema], id: "ignored", userName: "put@corp.example", nickName: "Q" },
    });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(put.json.id).toBe(made.json.id);
    expect(put.json.title).toBeUndefined();
    expect(put.json.nickName).toBe("Q");
    expectError(
      await scim.send({
        method: "PUT",
        path: `/Users/${made.json.id}`,
        body: { schemas: [userSchema] },
      }),
      400,
      "invalidValue",
    );
    expectError(
      await scim.send({
        method: "PUT",
        path: "/Users/no-such-user",
        body: { schemas: [userSchema], userName: "x" },
      }),
      404,
    );
  });

  it("RFC 7644 3.3 and 3.5.1: a userName taken (without case) is 409 uniqueness, on POST and PUT", async () => {
    expectError(
      await scim.send({
        method: "POST",
        path: "/Users",
        body: { schemas: [userSchema], userName: "BOB@CORP.EXAMPLE" },
      }),
      409,
      "uniqueness",
    );
    expectError(
      await scim.send({
        method: "PUT",
        path: `/Users/${ids["carol@other.example"]}`,
        body: { schemas: [userSchema], userName: "Bob@Corp.Example" },
      }),
      409,
      "uniqueness",
    );
  });

  it("RFC 7644 3.14: the ETag is meta.version; If-Match with a stale version is 412, with the current one goes through", async () => {
    const id = ids["bob@corp.example"]!;
    const read = await get(`/Users/${id}`);
    expect(read.etag).toBe(read.json.meta.version);
    expect(read.etag).toMatch(/^W\/".+"$/);
    const ok = await scim.send(
      {
        method: "PATCH",
        path: `/Users/${id}`,
        body: { schemas: [patchOp], Operations: [{ op: "replace", path: "nickName", value: "B" }] },
      },
      { "if-match": read.etag! },
    );
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(ok.etag).not.toBe(read.etag);
    expectError(
      await scim.send(
        {
          method: "PATCH",
          path: `/Users/${id}`,
          body: {
            schemas: [patchOp],
            Operations: [{ op: "replace", path: "nickName", value: "C" }],
          },
        },
        { "if-match": read.etag! },
      ),
      412,
    );
    expect((await get(`/Users/${id}`)).json.nickName).toBe("B");
  });

  it("RFC 7644 3.1 and 8.1: answers are application/scim+json; a body of another type is 415", async () => {
    expect((await get("/Users")).type).toMatch(/^application\/scim\+json/);
    const res = await scimFetch(
      scim.base,
      scim.token,
      {
        method: "POST",
        path: "/Users",
        body: { schemas: [userSchema], userName: "typed@corp.example" },
      },
      { "content-type": "text/plain" },
    );
    expectError(res, 415);
  });

  it("RFC 7644 3.12: every refusal is an Error body with the status as a string", async () => {
    expectError(await get("/Users/no-such-user"), 404);
    expectError(await get("/Groups/0000000000000000"), 404);
    expectError(await get("/Nowhere"), 404);
    expectError(
      await scimFetch(scim.base, "gatehouse_scim_wrong", { method: "GET", path: "/Users" }),
      401,
    );
    expectError(
      await scim.send({
        method: "POST",
        path: "/Users",
        body: { userName: "no-schemas@corp.example" },
      }),
      400,
      "invalidSyntax",
    );
  });
});
