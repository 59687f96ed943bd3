import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newPgDatabase } from "../helpers/postgres.js";
import { call, mintToken, pollAnswer, useReplicaPair, viewerRoleUid } from "../helpers/replicas.js";

// Two `gatehouse serve` processes on one PostgreSQL: a request made on one and approved on the
// other is answered there at once, and the binding it made grants on the first. How long the
// first took to honour it is printed, never asserted.

const editorRoleUid = builtinRoles.find((r) => r.name === "editor")!.uid;
/** When polling gives up, so that the test stops by itself. */
const giveUpMs = 30_000;

const pair = useReplicaPair(newPgDatabase, "req", "asking");

describe("access requests on two replicas", () => {
  it("an approval on one replica grants on the other", { timeout: 90_000 }, async () => {
    const { env, org } = pair;
    const [r0, r1] = pair.replicas;
    const made = await call(r0.url, "POST", `/iam/v2beta1/identities/${org.orgUid}`, org.token, {
      name: "asker",
      claimMatch: { issuer: "https://ci.example.com", subject: "asker" },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const asker = made.body!.uid as string;
    const bound = await call(r0.url, "POST", `/iam/v2beta1/roleBindings/${org.orgUid}`, org.token, {
      identityUid: asker,
      roleUid: viewerRoleUid,
    });
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    const token = await mintToken(env, asker);
    let n = 0;
    const push = () =>
      call(r0.url, "POST", `/registry/v2beta1/repos/${org.orgUid}`, token, { name: `app${++n}` });
    // A viewer may not create repos: r0 has that answer cached.
    expect((await push()).status).toBe(403);

    const asked = await call(r0.url, "POST", `/iam/v2beta1/accessRequests/${org.orgUid}`, token, {
      roleUid: editorRoleUid,
      duration: "3600s",
      reason: "ship it",
    });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    const uid = asked.body!.uid as string;
    const approved = await call(
      r1.url,
      "POST",
      `/iam/v2beta1/accessRequests/${uid}:approve`,
      org.token,
      {},
    );
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    const at = Date.now();
    const seen = await call(r0.url, "GET", `/iam/v2beta1/accessRequests/${uid}`, token);
    expect(seen.body!.state).toBe("APPROVED");
    const pushed = await pollAnswer(push, (a) => a.status === 200, giveUpMs);
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(200);
    console.log(`req-r0: granted ${Date.now() - at} ms after the approval on req-r1`);
    // Approved once: the other replica refuses a second answer.
    const again = await call(
      r0.url,
      "POST",
      `/iam/v2beta1/accessRequests/${uid}:deny`,
      org.token,
      {},
    );
    expect(again.status).toBe(400);
  });
});
