import { beforeAll, describe, expect, it } from "vitest";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";
import type { TestCaller } from "../helpers/test-server.js";

// `gatehouse iam access-requests` against a real server: a workload asks, the owner answers.

let group: string;
let asker: TestCaller;

const { gh, org, env, json } = useCliSuite("cli-asks");
beforeAll(async () => {
  group = (await json(["iam", "groups", "create", "--parent", org.uid, "--name", "ops"])).uid;
  asker = await gh.makeIdentity(group, ["viewer"]);
});

describe("gatehouse iam access-requests", () => {
  const ask = (reason: string) =>
    json(
      [
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
      ],
      asker.token,
    );

  it("create, list, approve: the requester holds the role for the duration", async () => {
    const made = await ask("deploy the hotfix");
    expect(made).toMatchObject({
      state: "PENDING",
      duration: "28800s",
      reason: "deploy the hotfix",
    });
    const pending = await json(["iam", "access-requests", "list", "--state", "PENDING"]);
    expect(pending.accessRequests.map((r: { uid: string }) => r.uid)).toEqual([made.uid]);
    const approved = await json(["iam", "access-requests", "approve", made.uid, "--reason", "ok"]);
    expect(approved).toMatchObject({ state: "APPROVED", reviewReason: "ok" });
    const binding = await json(["iam", "role-bindings", "get", approved.roleBindingUid]);
    expect(binding).toMatchObject({ identity: { uid: asker.uid }, role: { name: "editor" } });
    expect(binding.expireTime).toBe(approved.grantExpireTime);
  });

  it("deny, and the requester may not answer its own", async () => {
    const made = await ask("just looking");
    const own = await runCli(["iam", "access-requests", "approve", made.uid], {
      ...env,
      GATEHOUSE_TOKEN: asker.token,
    });
    expect(own.code).not.toBe(0);
    expect(own.stderr).toMatch(/permission/i);
    const denied = await json(["iam", "access-requests", "deny", made.uid]);
    expect(denied).toMatchObject({ state: "DENIED" });
    expect((await json(["iam", "access-requests", "get", made.uid], asker.token)).state).toBe(
      "DENIED",
    );
  });
});
