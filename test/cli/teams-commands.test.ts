import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// `gatehouse iam teams ...` and the membership commands against a real server: what a person
// types, and what they read back.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;

const { gh, org, env, json } = useCliSuite("cli-teams");

describe("gatehouse iam teams", () => {
  it("creates a team, binds a role to it, adds, lists and removes members, deletes it", async () => {
    const member = await gh.makeIdentity(org.uid);
    const team = await json(["iam", "teams", "create", "--parent", org.uid, "--name", "sre"]);
    expect(team).toMatchObject({ name: "sre" });
    const bound = await json([
      "iam",
      "role-bindings",
      "create",
      "--parent",
      org.uid,
      "--team-uid",
      team.uid,
      "--role-uid",
      viewer.uid,
    ]);
    expect(bound.team.uid).toBe(team.uid);
    const added = await json([
      "iam",
      "team-add-members",
      "--uid",
      team.uid,
      "--identity-uids",
      member.uid,
    ]);
    expect(added.memberCount).toBe("1");
    const table = await runCli(["iam", "team-members", "--uid", team.uid], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(member.uid);
    const listed = await json(["iam", "teams", "list", "--children-of", org.uid]);
    expect(listed.teams.map((t: { uid: string }) => t.uid)).toContain(team.uid);
    const removed = await json([
      "iam",
      "team-remove-members",
      "--uid",
      team.uid,
      "--identity-uids",
      member.uid,
    ]);
    expect(removed.memberCount ?? "0").toBe("0");
    const del = await runCli(["iam", "teams", "delete", team.uid], env);
    expect(del).toMatchObject({ code: 0, stdout: `deleted ${team.uid}\n` });
  });
});
