import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// `gatehouse iam bind-batch`: BatchCreateRoleBindings from the command line, all or nothing.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

const { gh, org, env } = useCliSuite("cli-batch");

const item = (identityUid: string, roleUid: string) =>
  JSON.stringify({ roleBinding: { identityUid, roleUid } });

describe("gatehouse iam bind-batch", () => {
  it("grants every binding given, or none, and says which one was refused", async () => {
    const a = await gh.makeIdentity(org.uid);
    const b = await gh.makeIdentity(org.uid);
    const made = await runCli(
      [
        "iam",
        "bind-batch",
        "--parent",
        org.uid,
        "--requests",
        item(a.uid, viewer.uid),
        "--requests",
        item(b.uid, editor.uid),
        "--output",
        "json",
      ],
      env,
    );
    expect(made.code, made.stderr).toBe(0);
    const out = JSON.parse(made.stdout);
    expect(out.roleBindings.map((x: { role: { name: string } }) => x.role.name)).toEqual([
      "viewer",
      "editor",
    ]);

    const c = await gh.makeIdentity(org.uid);
    const refused = await runCli(
      [
        "iam",
        "bind-batch",
        "--parent",
        org.uid,
        "--requests",
        item(c.uid, viewer.uid),
        "--requests",
        item(c.uid, "not-a-role"),
      ],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("requests[1].roleBinding.roleUid");
    const listed = await runCli(
      ["iam", "role-bindings", "list", "--identity", c.uid, "--output", "json"],
      env,
    );
    expect(JSON.parse(listed.stdout).roleBindings ?? []).toEqual([]);

    const malformed = await runCli(
      ["iam", "bind-batch", "--parent", org.uid, "--requests", "{not json"],
      env,
    );
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--requests: expected one item as JSON/);
  });
});
