import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, storeRoles } from "../../src/auth/capabilities.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { newPgDatabase } from "../helpers/postgres.js";
import {
  call,
  mintToken,
  pollAnswer,
  type Replica,
  sleep,
  useReplicaPair,
} from "../helpers/replicas.js";
import { scimFetch } from "./scim-client.js";
import { entra, okta } from "./scim-fixtures.js";

// Two `gatehouse serve` processes on one PostgreSQL: a SCIM deprovisioning made through one
// replica (active false, or DELETE) ends the person's token on the other too (the token cutoff
// and the bindings' delete reach its access cache through the change feed), and the
// reactivation through the other gives nothing back on the first. How long the other replica
// took is printed, never asserted.

const editor = builtinRoles.find((r) => r.name === "editor")!.uid;
/** When polling gives up, so that the test stops by itself. */
const giveUpMs = 30_000;

let databaseUrl = "";
const pair = useReplicaPair(
  async () => {
    databaseUrl = await newPgDatabase();
    return databaseUrl;
  },
  "scim",
  "directory",
);

// The test's own store on the replicas' database: people are made by a sign-in, which this
// file does not drive (test/scim/scim-sign-in.test.ts does), so it writes them directly.
let store: Store;
beforeAll(async () => {
  store = await createPostgresStore(databaseUrl, { roles: storeRoles, listen: false });
});
afterAll(async () => {
  await store?.close();
});

describe("SCIM deprovisioning on two replicas", () => {
  it("active false through one replica refuses the person's token on the other, and reactivation gives nothing back", {
    timeout: 120_000,
  }, async () => {
    const { env, org } = pair;
    const [r0, r1] = pair.replicas;
    const created = await call(
      r0.url,
      "POST",
      `/iam/v2beta1/scim/${org.orgUid}:createToken`,
      org.token,
      {},
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const scimToken = created.body!.token as string;
    const scimAt = (r: Replica) => `${r.url}/scim/v2/${org.orgUid}`;

    /** A person, editor in the organization, provisioned by the directory; a token of theirs. */
    async function person(name: string) {
      const email = `${name}@corp.example`;
      const p = await store.upsertPerson({
        uid: newRootUid(),
        issuer: "https://users.test",
        subject: name,
        name,
        email,
        now: Date.now(),
      });
      await store.createRoleBinding({
        uid: newChildUid(org.orgUid),
        groupUid: org.orgUid,
        identityUid: p.uid,
        roleUid: editor,
        now: Date.now(),
      });
      const made = await scimFetch(scimAt(r0), scimToken, {
        method: "POST",
        path: "/Users",
        body: {
          schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
          userName: email,
          emails: [{ value: email, primary: true }],
          active: true,
        },
      });
      expect(made.status, JSON.stringify(made.json)).toBe(201);
      return { uid: p.uid, id: made.json.id as string, token: await mintToken(env, p.uid) };
    }
    const read = (r: Replica, token: string) =>
      call(r.url, "GET", `/iam/v2beta1/groups/${org.orgUid}`, token, undefined, 5_000);

    const dana = await person("dana");
    // Both replicas let her read the organization, and cache that answer.
    for (const r of pair.replicas) expect((await read(r, dana.token)).status).toBe(200);

    expect((await scimFetch(scimAt(r0), scimToken, entra.disable(dana.id))).status).toBe(200);
    const at = performance.now();
    // The replica that made the change refuses at once; the other once the change reaches it.
    expect((await read(r0, dana.token)).status).toBe(401);
    const refused = await pollAnswer(
      () => read(r1, dana.token),
      (a) => a.status === 401,
      giveUpMs,
    );
    expect(refused.status, "scim-r1 still honours a deprovisioned person's token").toBe(401);
    const deactivateMs = performance.now() - at;

    // Reactivated through the other replica: a new token of hers is good on both, but the role
    // she held does not come back, and her old token stays refused.
    expect((await scimFetch(scimAt(r1), scimToken, okta.reactivate(dana.id))).status).toBe(200);
    await sleep(1100); // a token of the cutoff's own second is refused
    const fresh = await mintToken(env, dana.uid);
    for (const r of pair.replicas) {
      expect((await read(r, fresh)).status).toBe(403);
      expect((await read(r, dana.token)).status).toBe(401);
    }

    // DELETE through the other replica, the first refuses.
    const eli = await person("eli");
    for (const r of pair.replicas) expect((await read(r, eli.token)).status).toBe(200);
    expect((await scimFetch(scimAt(r1), scimToken, entra.delete(eli.id))).status).toBe(204);
    const at2 = performance.now();
    expect((await read(r1, eli.token)).status).toBe(401);
    const gone = await pollAnswer(
      () => read(r0, eli.token),
      (a) => a.status === 401,
      giveUpMs,
    );
    expect(gone.status, "scim-r0 still honours a deleted person's token").toBe(401);
    console.log(
      `SCIM deprovisioning on the other replica: active false refused after ${deactivateMs.toFixed(1)} ms, DELETE after ${(performance.now() - at2).toFixed(1)} ms`,
    );
  });
});
