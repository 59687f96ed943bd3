import { beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

// `gatehouse iam access-requests` against a real server: a workload asks, the owner answers.

let org: TestOrg;
let group: string;
let asker: TestCaller;
const envOf = (token: string) => ({ GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: token });

// biome-ignore lint/suspicious/noExplicitAny: JSON as the tests read it
async function json(token: string, argv: string[]): Promise<any> {
  const r = await runCli([...argv, "--output", "json"], envOf(token));
  if (r.code !== 0) throw new Error(`gatehouse ${argv.join(" ")}: ${r.code} ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const gh = useTestServer();
beforeAll(async () => {
  org = await gh.makeOrg("cli-asks");
  group = (
    await json(org.owner.token, ["iam", "groups", "create", "--parent", org.uid, "--name", "ops"])
  ).uid;
  asker = await gh.makeIdentity(group, ["viewer"]);
});

describe("gatehouse iam access-requests", () => {
  const ask = (reason: string) =>
    json(asker.token, [
      "iam",
      "access-requests",
      "create",
      "--parent",
      group,
      "--role-uid",
      "editor",
      "--duration",
      "8h",
      "--reason",
      reason,
    ]);

  it("create, list, approve: the requester holds the role for the duration", async () => {
    const made = await ask("deploy the hotfix");
    expect(made).toMatchObject({
      state: "PENDING",
      duration: "28800s",
      reason: "deploy the hotfix",
    });
    const pending = await json(org.owner.token, [
      "iam",
      "access-requests",
      "list",
      "--state",
      "PENDING",
    ]);
    expect(pending.accessRequests.map((r: { uid: string }) => r.uid)).toEqual([made.uid]);
    const approved = await json(org.owner.token, [
      "iam",
      "access-requests",
      "approve",
      made.uid,
      "--reason",
      "ok",
    ]);
    expect(approved).toMatchObject({ state: "APPROVED", reviewReason: "ok" });
    const binding = await json(org.owner.token, [
      "iam",
      "role-bindings",
      "get",
      approved.roleBindingUid,
    ]);
    expect(binding).toMatchObject({ identity: { uid: asker.uid }, role: { name: "editor" } });
    expect(binding.expireTime).toBe(approved.grantExpireTime);
  });

  it("deny, and the requester may not answer its own", async () => {
    const made = await ask("just looking");
    const own = await runCli(["iam", "access-requests", "approve", made.uid], envOf(asker.token));
    expect(own.code).not.toBe(0);
    expect(own.stderr).toMatch(/permission/i);
    const denied = await json(org.owner.token, ["iam", "access-requests", "deny", made.uid]);
    expect(denied).toMatchObject({ state: "DENIED" });
    expect((await json(asker.token, ["iam", "access-requests", "get", made.uid])).state).toBe(
      "DENIED",
    );
  });
});
