import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v1/identities_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { personUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { connectErr, connectTransports } from "../helpers/groups-clients.js";
import { badRequestFields, type Json, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  type TestCaller,
  type TestOrg,
  useTestServer,
} from "../helpers/test-server.js";

// v1 groups:lookupGroup and identities/lookup over v2 operations, on REST (fetch), Connect,
// gRPC-Web and gRPC (connect-node), on SQLite and PostgreSQL: each answers only what the
// caller may see through v2, and a lookup never creates an identity (people join by invite).

const wires = ["rest", "connect", "grpcWeb", "grpc"] as const;
type Wire = (typeof wires)[number];
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const users = "https://users.test";

/** A lookup's answer: the JSON v1 REST sends (or the message as JSON), or the error. */
type Reply = { ok: true; json: Json } | { ok: false; code: number; fields: string[] };

const restCodes: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5 };

async function call(
  url: string,
  over: Wire,
  who: TestCaller | undefined,
  what: { group: true } | { issuer: string; subject: string },
): Promise<Reply> {
  const headers = who?.headers ?? {};
  if (over === "rest") {
    const path =
      "group" in what
        ? "/iam/v1/groups:lookupGroup"
        : `/iam/v1/identities/lookup?${new URLSearchParams(what)}`;
    const r = await restCall(url, "GET", path, undefined, headers);
    if (r.status === 200) return { ok: true, json: r.json };
    return { ok: false, code: restCodes[r.status] ?? -r.status, fields: badRequestFields(r.json) };
  }
  const t = connectTransports(url, headers)[over];
  try {
    if ("group" in what) {
      const r = await createClient(GroupsService, t).lookupGroup({});
      return { ok: true, json: { group: { id: r.group?.id, name: r.group?.name } } };
    }
    const r = await createClient(IdentitiesService, t).lookup(what);
    return {
      ok: true,
      json: {
        id: r.id,
        name: r.name,
        ...(r.relationship.case === "claimMatch"
          ? {
              claimMatch: {
                issuer: r.relationship.value.issuer,
                subject: r.relationship.value.subject,
              },
            }
          : {}),
      },
    };
  } catch (e) {
    const err = connectErr(e);
    return { ok: false, code: err.code, fields: err.fields };
  }
}

describe.each(backends)("v1 lookups on %s", (backend: Backend) => {
  const ts = useTestServer({}, { backend });
  let orgA: TestOrg;
  let orgB: TestOrg;
  let team: string;
  /** A workload of A (claim match https://ci.test / workload-N), and one bound below A only. */
  let workload: TestCaller;
  let below: TestCaller;
  let workloadSubject: string;
  /** A person who signed in and is a viewer of A, and their token. */
  let person: TestCaller;

  beforeAll(async () => {
    orgA = await ts.makeOrg("lookup-a");
    orgB = await ts.makeOrg("lookup-b");
    team = newChildUid(orgA.uid);
    await ts.store.createGroup({
      uid: team,
      parentUid: orgA.uid,
      name: "team",
      description: "",
      now: 1,
    });
    workload = await ts.makeIdentity(team);
    workloadSubject = (await ts.store.getIdentity(workload.uid))!.claimMatch!.subject!;
    below = await ts.makeIdentity(team, ["viewer"]);
    const uid = personUid(users, "ada");
    await ts.store.upsertPerson({
      uid,
      issuer: users,
      subject: "ada",
      name: "Ada",
      email: "",
      now: 1,
    });
    await ts.store.createRoleBinding({
      uid: newChildUid(orgA.uid),
      groupUid: orgA.uid,
      identityUid: uid,
      roleUid: viewer.uid,
      now: 1,
    });
    const token = await ts.tokenFor(uid);
    person = { uid, token, headers: { authorization: `Bearer ${token}` } };
  });

  describe.each(wires)("over %s", (over) => {
    it("LookupGroup answers the caller's organization, or the highest group it may list", async () => {
      expect(await call(ts.url, over, orgA.owner, { group: true })).toMatchObject({
        ok: true,
        json: { group: { id: orgA.uid, name: "lookup-a" } },
      });
      expect(await call(ts.url, over, orgB.owner, { group: true })).toMatchObject({
        json: { group: { id: orgB.uid } },
      });
      expect(await call(ts.url, over, person, { group: true })).toMatchObject({
        json: { group: { id: orgA.uid } },
      });
      expect(await call(ts.url, over, below, { group: true })).toMatchObject({
        json: { group: { id: team, name: "team" } },
      });
      // Bound nowhere: nothing to answer. Without a token: UNAUTHENTICATED.
      expect(await call(ts.url, over, workload, { group: true })).toMatchObject({
        ok: false,
        code: 5,
      });
      expect(await call(ts.url, over, undefined, { group: true })).toMatchObject({
        ok: false,
        code: 16,
      });
    });

    it("Lookup finds a workload by its claim match, within the caller's organization only", async () => {
      const q = { issuer: "https://ci.test", subject: workloadSubject };
      expect(await call(ts.url, over, orgA.owner, q)).toMatchObject({
        ok: true,
        json: { id: workload.uid, claimMatch: q },
      });
      expect(await call(ts.url, over, below, q)).toMatchObject({ json: { id: workload.uid } });
      // Another organization's owner learns nothing: the same NOT_FOUND as for no identity.
      expect(await call(ts.url, over, orgB.owner, q)).toEqual({ ok: false, code: 5, fields: [] });
      expect(
        await call(ts.url, over, orgA.owner, { issuer: "https://ci.test", subject: "nobody" }),
      ).toEqual({ ok: false, code: 5, fields: [] });
    });

    it("Lookup finds a person bound in the caller's organization, and the caller itself", async () => {
      const q = { issuer: users, subject: "ada" };
      expect(await call(ts.url, over, orgA.owner, q)).toMatchObject({
        ok: true,
        json: { id: person.uid, name: "Ada" },
      });
      expect(await call(ts.url, over, person, q)).toMatchObject({ json: { id: person.uid } });
      expect(await call(ts.url, over, orgB.owner, q)).toMatchObject({ ok: false, code: 5 });
    });

    it("Lookup never creates a person who has not signed in, and needs issuer and subject", async () => {
      const subject = `newcomer-${over}`;
      expect(await call(ts.url, over, orgA.owner, { issuer: users, subject })).toMatchObject({
        ok: false,
        code: 5,
      });
      expect(await ts.store.getIdentity(personUid(users, subject))).toBeUndefined();
      expect(await call(ts.url, over, orgA.owner, { issuer: "", subject: "" })).toEqual({
        ok: false,
        code: 3,
        fields: ["issuer", "subject"],
      });
      expect(await call(ts.url, over, undefined, { issuer: users, subject })).toMatchObject({
        ok: false,
        code: 16,
      });
    });
  });
});
