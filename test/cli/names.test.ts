import { expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// Names where a person types a uid (issue 43): a group by its path, an identity by name or
// email, a role by name; a name that matches nothing, or several, is a usage error that says so.

const { gh, org, env, json } = useCliSuite("names-org");

it("takes a group's path wherever a group uid goes", async () => {
  const eng = await json(["iam", "groups", "create", "--parent", "names-org", "--name", "eng"]);
  expect(eng.uid.startsWith(`${org.uid}/`)).toBe(true);
  const web = await json(["iam", "groups", "create", "--parent", "names-org/eng", "--name", "web"]);
  expect(web.uid.startsWith(`${eng.uid}/`)).toBe(true);
  expect((await json(["iam", "groups", "get", "names-org/eng/web"])).uid).toBe(web.uid);
  const listed = await json(["iam", "groups", "list", "--children-of", "names-org/eng"]);
  expect(listed.groups.map((g: { uid: string }) => g.uid)).toEqual([web.uid]);
  const renamed = await json(["iam", "groups", "update", "names-org/eng/web", "--name", "www"]);
  expect(renamed).toMatchObject({ uid: web.uid, name: "www" });
  const missing = await runCli(["iam", "groups", "get", "names-org/eng/web"], env);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain('no group below names-org/eng named "web" that you may read');
  // Another organization's groups are not the caller's to name.
  const other = await gh.makeOrg("elsewhere");
  const foreign = await runCli(["iam", "groups", "list", "--children-of", "elsewhere"], env);
  expect(foreign.code).toBe(2);
  expect(foreign.stderr).toContain('no organization named "elsewhere" that you may read');
  expect(other.uid).not.toBe(org.uid);
});

it("binds and checks by identity name and role name; an ambiguous name lists its matches", async () => {
  const team = await json(["iam", "groups", "create", "--parent", "names-org", "--name", "team"]);
  const identity = (parent: string) =>
    json([
      "iam",
      "identities",
      "create",
      "--parent",
      parent,
      "--name",
      "deploy-bot",
      "--claim-match.issuer",
      "https://ci.example.com",
      "--claim-match.subject",
      `repo:${parent}`,
    ]);
  const bot = await identity("names-org/team");
  const bound = await json([
    "iam",
    "role-bindings",
    "create",
    "--parent",
    "names-org/team",
    "--identity-uid",
    "deploy-bot",
    "--role-uid",
    "editor",
  ]);
  expect(bound).toMatchObject({
    identity: { uid: bot.uid },
    role: { uid: builtinRoles.find((r) => r.name === "editor")?.uid },
    group: { uid: team.uid },
  });
  const check = await runCli(
    [
      "iam",
      "check-access",
      "--identity-uid",
      "deploy-bot",
      "--group-uid",
      "names-org/team",
      "--capability",
      "repo.create",
      "-o",
      "json",
    ],
    env,
  );
  expect(check.code).toBe(0);
  expect(JSON.parse(check.stdout).allowed).toBe(true);

  // A second deploy-bot in the organization: the name no longer picks one out.
  const twin = await identity("names-org");
  const ambiguous = await runCli(
    [
      "iam",
      "check-access",
      "--identity-uid",
      "deploy-bot",
      "--group-uid",
      "names-org",
      "--capability",
      "repo.create",
    ],
    env,
  );
  expect(ambiguous.code).toBe(2);
  expect(ambiguous.stderr).toContain("2 identity");
  expect(ambiguous.stderr).toContain(bot.uid);
  expect(ambiguous.stderr).toContain(twin.uid);
  const unknownRole = await runCli(
    [
      "iam",
      "role-bindings",
      "create",
      "--parent",
      "names-org",
      "--identity-uid",
      twin.uid,
      "--role-uid",
      "no-such-role",
    ],
    env,
  );
  expect(unknownRole.code).toBe(2);
  expect(unknownRole.stderr).toContain('no role named "no-such-role"');
});
