import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { restCall } from "../helpers/rest-client.js";
import { backends, type TestOrg, useTestServer } from "../helpers/test-server.js";
import { connectScim } from "./scim-client.js";
import { entra, okta } from "./scim-fixtures.js";

const editor = builtinRoles.find((r) => r.name === "editor")!;

// Deprovisioning is immediate (issue 39 item 3): a SCIM user made inactive, or deleted, ends
// the person's sessions and tokens at once (a token without a session too), removes their
// access in the organization, and keeps the audit trail; reactivation gives nothing back.
describe.each(backends)("SCIM deprovisioning on %s", (backend) => {
  const gh = useTestServer({}, { backend });
  let seq = 0;

  /** A person of `org` (an editor there) with a verified email, and two tokens of theirs. */
  async function member(org: TestOrg) {
    const n = ++seq;
    const email = `member-${n}@corp.example`;
    const person = await gh.store.upsertPerson({
      uid: newRootUid(),
      issuer: "https://idp.corp.example",
      subject: `member-${n}`,
      name: `Member ${n}`,
      email,
      now: Date.now(),
    });
    await gh.store.createRoleBinding({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      identityUid: person.uid,
      roleUid: editor.uid,
      now: Date.now(),
    });
    // A browser sign-in's session, and an access token of it.
    const sessionId = `session-${n}-${backend}`;
    await gh.store.createAuthorizationCode({
      codeHash: `code-${n}-${backend}`,
      sessionId,
      identityUid: person.uid,
      clientId: "gatehouse-cli",
      redirectUri: "http://127.0.0.1/cb",
      codeChallenge: "x",
      expireTime: Date.now() + 60_000,
      now: Date.now(),
    });
    const sessionToken = (
      await gh.server.tokens.issue(person.uid, gh.config.baseUrl, { sid: sessionId })
    ).token;
    // A token of no session (an STS exchange's).
    const plainToken = await gh.tokenFor(person.uid);
    return { uid: person.uid, email, sessionId, sessionToken, plainToken };
  }

  const caller = (token: string) =>
    restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, { authorization: `Bearer ${token}` });
  const getOrg = (org: TestOrg, token: string) =>
    restCall(gh.url, "GET", `/iam/v2beta1/groups/${org.uid}`, undefined, {
      authorization: `Bearer ${token}`,
    });
  const provision = async (scim: Awaited<ReturnType<typeof connectScim>>, email: string) => {
    const res = await scim.send({
      method: "POST",
      path: "/Users",
      body: {
        schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
        userName: email,
        emails: [{ value: email, primary: true, type: "work" }],
        active: true,
      },
    });
    expect(res.status).toBe(201);
    return res.json.id as string;
  };

  it("active False (Entra ID) ends every token and session at once and removes the access; reactivation restores nothing", async () => {
    const org = await gh.makeOrg("deprovision-org");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const bob = await member(org);
    const id = await provision(scim, bob.email);
    for (const token of [bob.sessionToken, bob.plainToken]) {
      expect((await caller(token)).status).toBe(200);
      expect((await getOrg(org, token)).status).toBe(200);
    }

    expect((await scim.send(entra.disable(id))).status).toBe(200);
    for (const token of [bob.sessionToken, bob.plainToken]) {
      const refused = await caller(token);
      expect(refused.status).toBe(401);
    }
    expect(await gh.store.sessionActive(bob.sessionId)).toBe(false);
    // The audit trail has the deprovisioning, about the person.
    const events = await gh.store.listEvents({
      childrenOf: bob.uid,
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 10,
    });
    expect(events.items.map((e) => e.type)).toContain("dev.gatehouse.scim.user.deprovisioned.v1");

    // Reactivated: a new token works (tokens of the cutoff's own second are refused), but
    // the role the person held in the organization does not come back, nor do old tokens.
    expect((await scim.send(okta.reactivate(id))).json.active).toBe(true);
    await sleep(1100);
    const fresh = await gh.tokenFor(bob.uid);
    expect((await caller(fresh)).status).toBe(200);
    expect((await getOrg(org, fresh)).status).toBe(403);
    expect((await caller(bob.plainToken)).status).toBe(401);
    expect(await gh.store.sessionActive(bob.sessionId)).toBe(false);
  });

  it("DELETE of the User deprovisions as well, and the owner still administers the organization", async () => {
    const org = await gh.makeOrg("delete-org");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    const carol = await member(org);
    const id = await provision(scim, carol.email);
    expect((await scim.send(entra.delete(id))).status).toBe(204);
    expect((await caller(carol.plainToken)).status).toBe(401);
    expect((await caller(carol.sessionToken)).status).toBe(401);
    expect((await getOrg(org, org.owner.token)).status).toBe(200);
  });

  it("refuses to deprovision the organization's last owner (409), changing nothing", async () => {
    const org = await gh.makeOrg("owner-org");
    const scim = await connectScim(gh, org.uid, org.owner.uid);
    // The owner's verified email, as their directory knows them.
    const email = `owner-${++seq}@corp.example`;
    await gh.store.upsertPerson({
      uid: org.owner.uid,
      issuer: "https://users.test",
      subject: "x",
      name: "Owner",
      email,
      now: Date.now(),
    });
    const id = await provision(scim, email);
    const refused = await scim.send(okta.deactivate(id));
    expect(refused.status).toBe(409);
    expect(refused.json.schemas).toEqual(["urn:ietf:params:scim:api:messages:2.0:Error"]);
    expect((await getOrg(org, org.owner.token)).status).toBe(200);
    expect((await scim.send(okta.get(id))).json.active).toBe(true);
  });
});
