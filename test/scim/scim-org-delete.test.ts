import { describe, expect, it } from "vitest";
import { restCall } from "../helpers/rest-client.js";
import { backends, useTestServer } from "../helpers/test-server.js";
import { connectScim } from "./scim-client.js";
import { entra, oktaGroups } from "./scim-fixtures.js";

const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";

// An organization's delete takes its SCIM connection with it: its token, its Users, the
// records of deleted Users and its Groups' rows; nothing of a gone organization's directory
// stays behind.
describe.each(backends)("deleting an organization with a SCIM connection on %s", (backend) => {
  const gh = useTestServer({}, { backend });

  it("deletes its connection, Users, tombstones and Groups", async () => {
    const org = await gh.makeOrg("scim-delete-org");
    const other = await gh.makeOrg("scim-delete-other");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const otherScim = await connectScim(gh, other.uid, other.owner.uid);
    const provision = async (client: typeof scim, userName: string) => {
      const res = await client.send({
        method: "POST",
        path: "/Users",
        body: { schemas: [userSchema], userName, externalId: userName, active: true },
      });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json.id as string;
    };
    const kept = await provision(scim, "kept@corp.example");
    const gone = await provision(scim, "gone@corp.example");
    expect((await scim.send(entra.delete(gone))).status).toBe(204);
    await provision(otherScim, "neighbour@corp.example");
    const group = await scim.send(oktaGroups.create());
    expect(group.status).toBe(201);
    expect((await scim.send(oktaGroups.add(group.json.id, kept))).status).toBe(200);

    const api = (method: string, path: string) =>
      restCall(gh.url, method, path, undefined, org.owner.headers);
    // The Group is a team of the organization, which holds its delete until deleted itself.
    expect((await api("DELETE", `/iam/v2beta1/teams/${org.uid}/${group.json.id}`)).status).toBe(
      200,
    );
    // Deleted through the Teams API, the Group is gone from SCIM too.
    expect((await scim.send({ method: "GET", path: `/Groups/${group.json.id}` })).status).toBe(404);
    const deleted = await api("DELETE", `/iam/v2beta1/groups/${org.uid}`);
    expect(deleted.status, JSON.stringify(deleted.json)).toBe(200);

    expect(await gh.store.getScimConnection(org.uid)).toBeUndefined();
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(401);
    expect(await gh.store.listScimUsers(org.uid, { by: "all" }, 10, 0)).toEqual([]);
    expect(await gh.store.countScimGroups(org.uid, { by: "all" })).toBe(0);
    expect(
      await gh.store.scimStanding(org.uid, {
        identityUid: "",
        externalId: "gone@corp.example",
        email: "",
      }),
    ).toBe("unknown");
    // The neighbour's directory is untouched.
    expect(await gh.store.getScimConnection(other.uid)).toBeDefined();
    expect(await gh.store.countScimUsers(other.uid, { by: "all" })).toBe(1);
  });
});
