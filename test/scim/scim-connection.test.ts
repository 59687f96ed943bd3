import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { restCall } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestServer } from "../helpers/test-server.js";
import { scimClient } from "./scim-client.js";
import { okta } from "./scim-fixtures.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;

// An owner connects the organization's directory: the API's CreateScimToken (and the CLI's
// `gatehouse scim token create`) answer the SCIM base URL and a token shown once.
describe("the SCIM connection", () => {
  const gh = useTestServer();

  it("is created, rotated and revoked by an owner through the API, and by no one else", async () => {
    const org = await gh.makeOrg("connect-api");
    const other = await gh.makeOrg("connect-other");
    const created = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/scim/${org.uid}:createToken`,
      {},
      org.owner.headers,
    );
    expect(created.status).toBe(200);
    expect(created.json.connection).toMatchObject({
      org: org.uid,
      baseUrl: `${gh.config.baseUrl}/scim/v2/${org.uid}`,
      creatorUid: org.owner.uid,
    });
    const token = created.json.token as string;
    const scim = scimClient(gh, org.uid, token);
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(200);
    // Read back, the connection never shows its token.
    const read = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/scim/${org.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.json)).not.toContain(token);

    // Neither another organization's owner nor a viewer of this one may make or read it.
    for (const headers of [
      other.owner.headers,
      (await gh.makeIdentity(org.uid, [viewer.uid])).headers,
    ]) {
      const refused = await restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/scim/${org.uid}:createToken`,
        {},
        headers,
      );
      expect(refused.status).toBe(403);
    }
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(200);
    // Only an organization has one.
    const group = newChildUid(org.uid);
    await gh.store.createGroup({
      uid: group,
      parentUid: org.uid,
      name: "sub",
      description: "",
      now: Date.now(),
    });
    const notRoot = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/scim/${group}:createToken`,
      {},
      org.owner.headers,
    );
    // The REST path takes one segment: a group below is no organization's path (404).
    expect(notRoot.status).toBe(404);
    expect(await gh.store.getScimConnection(group)).toBeUndefined();

    const rotated = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/scim/${org.uid}:createToken`,
      {},
      org.owner.headers,
    );
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(401);
    const next = scimClient(gh, org.uid, rotated.json.token);
    expect((await next.send(okta.create())).status).toBe(201);

    const revoked = await restCall(
      gh.url,
      "DELETE",
      `/iam/v2beta1/scim/${org.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(revoked.status).toBe(200);
    expect((await next.send({ method: "GET", path: "/Users" })).status).toBe(401);
  });

  it("is made with `gatehouse scim token create --org`, rotated and revoked likewise", async () => {
    const org = await gh.makeOrg("connect-cli");
    const env = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token };
    const run = await runCli(["scim", "token", "create", "--org", org.uid], env);
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout) as { connection: { baseUrl: string }; token: string };
    const url = printed.connection.baseUrl;
    const token = printed.token;
    expect(url).toBe(`${gh.config.baseUrl}/scim/v2/${org.uid}`);
    const scim = scimClient(gh, org.uid, token);
    expect((await scim.send({ method: "GET", path: "/ServiceProviderConfig" })).status).toBe(200);
    const shown = await runCli(["scim", "connection", "--org", org.uid], env);
    expect(shown.stdout).toContain(url);
    expect(shown.stdout).not.toContain(token);
    const table = await runCli(
      ["scim", "token", "rotate", "--org", org.uid, "--output", "table"],
      env,
    );
    expect(table.stdout).toContain(`base URL: ${url}`);
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(401);
    expect((await runCli(["scim", "token", "revoke", "--org", org.uid], env)).code).toBe(0);
    expect((await scim.send({ method: "GET", path: "/Users" })).status).toBe(401);
  });
});
