import { createClient } from "@connectrpc/connect";
import { beforeAll, expect, it } from "vitest";
import { CallerService } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// Who am I: the bearer's identity and its role bindings, for `gatehouse auth status` and the
// console. Any caller, about itself only.

let org: TestOrg;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("whoami");
});

it("answers the caller's identity and bindings over REST, hydrated", async () => {
  const res = await restCall(ts.url, "GET", "/iam/v2beta1/caller", undefined, org.owner.headers);
  expect(res.status).toBe(200);
  expect(res.json.identity.uid).toBe(org.owner.uid);
  expect(res.json.roleBindings).toHaveLength(1);
  expect(res.json.roleBindings[0]).toMatchObject({
    group: { uid: org.uid, name: "whoami" },
    role: { name: "owner" },
    identity: { uid: org.owner.uid },
  });
});

it("answers a workload identity about itself over Connect, and nobody without a token", async () => {
  const team = (
    await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name: "team" },
      org.owner.headers,
    )
  ).json.uid as string;
  const ci = await ts.makeIdentity(team, ["viewer", "editor"]);
  const caller = createClient(CallerService, transportFor("connect", ts.url, ci.headers));
  const me = await caller.getCaller({});
  expect(me.identity?.uid).toBe(ci.uid);
  expect(me.roleBindings.map((b) => b.role?.name).sort()).toEqual(["editor", "viewer"]);
  expect(me.roleBindings.every((b) => b.group?.uid === team)).toBe(true);
  const anonymous = await restCall(ts.url, "GET", "/iam/v2beta1/caller");
  expect(anonymous.status).toBe(401);
});
