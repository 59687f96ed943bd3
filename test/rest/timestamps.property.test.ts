import fc from "fast-check";
import { beforeAll, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// Every timestamp in every resource's JSON (REST and Connect) carries a millisecond fraction, on a whole second
// too (protobuf-es alone writes `...:52Z` there, about one create in a thousand).

let org: TestOrg;
const base = Math.floor(Date.now() / 1000);
const clock = { t: base * 1000 };
const ts = useTestServer({}, { now: () => clock.t });
beforeAll(async () => {
  org = await ts.makeOrg("times");
});

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const rfc3339ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Every string in `json` that starts like a date-time. */
function times(json: Json, out: string[] = []): string[] {
  if (typeof json === "string" && /^\d{4}-\d\d-\d\dT/.test(json)) out.push(json);
  else if (json && typeof json === "object") for (const v of Object.values(json)) times(v, out);
  return out;
}

it("writes every resource's times with milliseconds", async () => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      // Within the owner token's hour, on the server's clock.
      fc.integer({ min: -1800, max: 1800 }),
      fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 999 })),
      async (seconds, ms) => {
        clock.t = (base + seconds) * 1000 + ms;
        const k = ++n;
        const call = async (method: string, path: string, body?: unknown) => {
          const r = await restCall(ts.url, method, path, body, org.owner.headers);
          expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(200);
          return r.json;
        };
        const group = await call("POST", `/iam/v2beta1/groups/${org.uid}`, { name: `g${k}` });
        const identity = await call("POST", `/iam/v2beta1/identities/${group.uid}`, {
          name: "ci",
          claimMatch: { issuer: "https://ci.example.com", subject: `s${k}` },
        });
        const answers: Json[] = [
          group,
          identity,
          await call("POST", `/iam/v2beta1/roles/${group.uid}`, {
            name: "r",
            capabilities: ["groups.list"],
          }),
          await call("POST", `/iam/v2beta1/roleBindings/${group.uid}`, {
            identityUid: identity.uid,
            roleUid: viewer,
          }),
          await call("POST", `/iam/v2beta1/groupInvites/${group.uid}`, { roleUid: viewer }),
          await call("POST", `/iam/v2beta1/identityProviders/${group.uid}`, {
            name: "idp",
            oidc: { issuer: "https://login.example.com", clientId: "c" },
          }),
          await call("POST", `/iam/v2beta1/accountAssociations/${group.uid}`, {
            name: "aa",
            amazon: { account: "123456789012" },
          }),
        ];
        const repo = await call("POST", `/registry/v2beta1/repos/${group.uid}`, { name: "app" });
        answers.push(
          repo,
          await call("POST", `/registry/v2beta1/tags/${repo.uid}`, {
            name: "v1",
            digest: `sha256:${"a".repeat(64)}`,
          }),
          await call("GET", `/iam/v2beta1/groups?uidp.descendantsOf=${org.uid}&pageSize=5`),
          await call("GET", `/iam/v2beta1/identities/${identity.uid}`),
        );
        // Connect JSON too, POST and GET forms.
        const connect = await fetch(
          `${ts.url}/gatehouse.iam.v2beta1.IdentitiesService/GetIdentity`,
          {
            method: "POST",
            headers: {
              ...org.owner.headers,
              "content-type": "application/json",
              "connect-protocol-version": "1",
            },
            body: JSON.stringify({ uid: identity.uid }),
          },
        );
        expect(connect.status).toBe(200);
        answers.push(await connect.json());
        const q = new URLSearchParams({
          connect: "v1",
          encoding: "json",
          message: JSON.stringify({ uid: group.uid }),
        });
        const viaGet = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup?${q}`, {
          headers: org.owner.headers,
        });
        expect(viaGet.status).toBe(200);
        answers.push(await viaGet.json());
        const found = answers.flatMap((a) => times(a));
        expect(found.length).toBeGreaterThan(15);
        for (const t of found) expect(t).toMatch(rfc3339ms);
        if (ms === 0) expect(found).toContain(new Date(clock.t).toISOString());
      },
    ),
    { numRuns: 12 },
  );
});
