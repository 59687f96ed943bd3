import { expect, it } from "vitest";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// What a capability means and who would grant it, from the command line (issue 43): a denial
// names the roles that would grant the capability, `iam capabilities` says what each one lets
// you do, and the other spelling of a capability (repos.* for repo.*) is read as the catalog's.

const { gh, org, env } = useCliSuite("caps-org");

it("a denial lists the built-in and custom roles that would grant the capability", async () => {
  const viewer = await gh.makeIdentity(org.uid, ["viewer"]);
  const role = await runCli(
    [
      "iam",
      "roles",
      "create",
      "--parent",
      org.uid,
      "--name",
      "repo-maker",
      "--capabilities",
      "repos.create",
      "--capabilities",
      "repo.list",
      "-o",
      "json",
    ],
    env,
  );
  expect(role.code).toBe(0);
  const made = JSON.parse(role.stdout);
  // Stored as the catalog spells it.
  expect(made.capabilities).toEqual(["repo.create", "repo.list"]);
  const denied = await runCli(
    [
      "iam",
      "check-access",
      "--identity-uid",
      viewer.uid,
      "--group-uid",
      org.uid,
      "--capability",
      "repos.create",
      "-o",
      "table",
    ],
    env,
  );
  expect(denied.code).toBe(1);
  expect(denied.stdout).toMatch(/^denied\n/);
  expect(denied.stdout).toContain(
    `roles that would grant repo.create: editor, owner, registry.push, repo-maker (${made.uid})`,
  );
  const json = await runCli(
    [
      "iam",
      "check-access",
      "--identity-uid",
      org.owner.uid,
      "--group-uid",
      org.uid,
      "--capability",
      "role_binding.create",
      "-o",
      "json",
    ],
    env,
  );
  expect(json.code).toBe(0);
  expect(JSON.parse(json.stdout).allowed).toBe(true);
});

it("iam capabilities says what each capability lets you do", async () => {
  const listed = await runCli(["iam", "capabilities", "--group-uid", org.uid, "-o", "table"], env);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(
    /^registry\.push +Push images \(which creates and moves their tags\)$/m,
  );
  expect(listed.stdout).toMatch(/^groups\.create +Create groups below this one$/m);
  for (const line of listed.stdout.trim().split("\n")) expect(line).toMatch(/^\S+ {2,}\S/);
});
