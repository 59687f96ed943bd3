import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// `gatehouse iam teams ...` and the membership commands against a real server: what a person
// types, and what they read back.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
let org: TestOrg;
let env: Record<string, string>;

// biome-ignore lint/suspicious/noExplicitAny: JSON as the tests read it
async function json(argv: string[]): Promise<any> {
  const r = await runCli([...argv, "--output", "json"], env);
  if (r.code !== 0) throw new Error(`gatehouse ${argv.join(" ")}: ${r.code} ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const gh = useTestServer();
beforeAll(async () => {
  org = await gh.makeOrg("cli-teams");
  env = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token };
});

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
