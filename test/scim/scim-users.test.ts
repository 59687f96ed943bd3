import { describe, expect, it } from "vitest";
import { backends, useTestServer } from "../helpers/test-server.js";
import { connectScim } from "./scim-client.js";
import { entra, okta } from "./scim-fixtures.js";

const errorSchema = "urn:ietf:params:scim:api:messages:2.0:Error";

describe.each(backends)("SCIM Users on %s", (backend) => {
  const gh = useTestServer({}, { backend });

  it("serves Okta's documented sequence: lookup, create, get, PUT, deactivate, reactivate", async () => {
    const org = await gh.makeOrg("okta-org");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const none = await scim.send(okta.lookup("test.user@okta.local"));
    expect(none.status).toBe(200);
    expect(none.type).toMatch(/^application\/scim\+json/);
    expect(none.json).toMatchObject({ totalResults: 0, startIndex: 1, Resources: [] });

    const created = await scim.send(okta.create());
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect(created.location).toBe(`${scim.base}/Users/${id}`);
    expect(created.json).toMatchObject({
      userName: "test.user@okta.local",
      name: { givenName: "Test", familyName: "User" },
      externalId: "00ujl29u0le5T6Aj10h7",
      active: true,
      meta: { resourceType: "User", location: `${scim.base}/Users/${id}` },
    });
    // The password is never kept, nor shown.
    expect(JSON.stringify(created.json)).not.toContain("1mz050nq");

    // Okta's lookup finds it without regard to case (userName is caseExact: false).
    const found = await scim.send(okta.lookup("TEST.user@okta.local"));
    expect(found.json.totalResults).toBe(1);
    expect(found.json.Resources[0].id).toBe(id);

    const got = await scim.send(okta.get(id));
    expect(got.status).toBe(200);
    expect(got.etag).toBe(created.json.meta.version);

    const put = await scim.send(okta.put(id));
    expect(put.status).toBe(200);
    expect(put.json.name.givenName).toBe("Another");
    expect(put.etag).not.toBe(got.etag);

    const off = await scim.send(okta.deactivate(id));
    expect(off.status).toBe(200);
    expect(off.json.active).toBe(false);
    const on = await scim.send(okta.reactivate(id));
    expect(on.json.active).toBe(true);
  });

  it('serves Entra ID\'s documented sequence: capitalised Replace, filtered paths, "False"', async () => {
    const org = await gh.makeOrg("entra-org");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const created = await scim.send(entra.create());
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const again = await scim.send(entra.create());
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({
      schemas: [errorSchema],
      status: "409",
      scimType: "uniqueness",
    });

    const byExternal = await scim.send(entra.lookupByExternalId());
    expect(byExternal.json.Resources.map((r: { id: string }) => r.id)).toEqual([id]);

    const updated = await scim.send(entra.update(id));
    expect(updated.status).toBe(200);
    expect(updated.json.emails).toEqual([
      { primary: true, type: "work", value: "updatedEmail@microsoft.com" },
    ]);
    expect(updated.json.name.familyName).toBe("updatedFamilyName");
    expect(updated.json.name.givenName).toBe("givenName");

    const managed = await scim.send(entra.manager(id));
    expect(managed.status).toBe(200);
    expect(managed.json.schemas).toContain(
      "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
    );
    expect(
      managed.json["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"].manager,
    ).toEqual({ value: "2819c223-7f76-453a-919d-413861904646" });

    const disabled = await scim.send(entra.disable(id));
    expect(disabled.status).toBe(200);
    expect(disabled.json.active).toBe(false);

    expect((await scim.send(entra.delete(id))).status).toBe(204);
    const gone = await scim.send({ method: "GET", path: `/Users/${id}` });
    expect(gone.status).toBe(404);
    expect(gone.json).toMatchObject({ schemas: [errorSchema], status: "404" });
  });
});
