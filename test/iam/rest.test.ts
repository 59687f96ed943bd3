import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("rest");
});

/** Call the REST API as `headers` (default: the organization's owner). */
const rest = (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = org.owner.headers,
) => restCall(ts.url, method, path, body, headers);

describe("IAM over REST", () => {
  it("refuses a call without a token with 401 and WWW-Authenticate", async () => {
    const r = await rest("GET", "/iam/v2beta1/identities", undefined, {});
    expect(r).toMatchObject({ status: 401, auth: "Bearer", json: { code: 16 } });
  });

  it("creates an organization owned by the calling person", async () => {
    const r = await rest("POST", "/iam/v2beta1/groups", { name: "from-rest" });
    expect(r.status).toBe(200);
    const bindings = await rest("GET", `/iam/v2beta1/roleBindings?group=${r.json.uid}`);
    expect(bindings.json.roleBindings).toHaveLength(1);
    expect(bindings.json.roleBindings[0]).toMatchObject({
      identity: { uid: org.owner.uid },
      role: { uid: ownerRole.uid, name: "owner" },
    });
    expect(bindings.json.totalCount).toBe("1");
  });

  it("manages an identity, a role and a binding", async () => {
    const id = await rest("POST", `/iam/v2beta1/identities/${org.uid}`, {
      name: "ci",
      claimMatch: { issuer: "https://ci.test", subject: "main" },
    });
    expect(id.status).toBe(200);
    expect(id.json).toMatchObject({ name: "ci", claimMatch: { issuer: "https://ci.test" } });
    const uid = id.json.uid as string;
    expect((await rest("GET", `/iam/v2beta1/identities/${uid}`)).json).toEqual(id.json);
    const patched = await rest("PATCH", `/iam/v2beta1/identities/${uid}?updateMask=description`, {
      description: "builds",
      name: "ignored",
    });
    expect(patched.json).toMatchObject({ name: "ci", description: "builds" });

    const role = await rest("POST", `/iam/v2beta1/roles/${org.uid}`, {
      name: "reader",
      capabilities: ["groups.list"],
    });
    expect(role.json).toMatchObject({ name: "reader", capabilities: ["groups.list"] });

    const binding = await rest("POST", `/iam/v2beta1/roleBindings/${org.uid}`, {
      identityUid: uid,
      roleUid: role.json.uid,
    });
    expect(binding.json).toMatchObject({ identity: { name: "ci" }, role: { name: "reader" } });
    const rebound = await rest("PATCH", `/iam/v2beta1/roleBindings/${binding.json.uid}`, {
      roleUid: viewer.uid,
    });
    expect(rebound.json.role).toMatchObject({ name: "viewer" });
    const dup = await rest("POST", `/iam/v2beta1/roleBindings/${org.uid}`, {
      identityUid: uid,
      roleUid: viewer.uid,
    });
    expect(dup).toMatchObject({ status: 409, json: { code: 6 } });

    const builtin = await rest("DELETE", `/iam/v2beta1/roles/${viewer.uid}`);
    expect(builtin).toMatchObject({ status: 400, json: { code: 9 } });
    expect((await rest("DELETE", `/iam/v2beta1/identities/${uid}`)).json).toEqual({});
    const left = await rest("GET", `/iam/v2beta1/roleBindings?identity=${uid}`);
    expect(left.json.totalCount).toBe("0");
    expect((await rest("DELETE", `/iam/v2beta1/roles/${role.json.uid}`)).status).toBe(200);
  });

  it("reports each failing field", async () => {
    const r = await rest("POST", `/iam/v2beta1/roles/${org.uid}`, {
      name: "",
      capabilities: ["nope"],
    });
    expect(r.status).toBe(400);
    expect(badRequestFields(r.json)).toEqual(["name", "capabilities"]);
  });

  it("answers 403 to another organization whether or not the resource exists", async () => {
    const other = await ts.makeOrg("other");
    const existing = await rest(
      "GET",
      `/iam/v2beta1/groups/${org.uid}`,
      undefined,
      other.owner.headers,
    );
    const missing = await rest(
      "GET",
      `/iam/v2beta1/groups/${org.uid}/0000000000000000`,
      undefined,
      other.owner.headers,
    );
    expect(existing.status).toBe(403);
    expect(missing.status).toBe(403);
    expect(missing.json.message).toBe(existing.json.message);
  });
});
