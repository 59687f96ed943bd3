import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { main } from "../../src/cli/main.js";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// The resource commands against a real server, over the generated Connect client: what a
// person types, what they read back, and the exit codes.

const { gh, org, env, json } = useCliSuite("cli-org");

describe("gatehouse iam groups", () => {
  it("creates, gets, updates (only the fields given), lists and deletes", async () => {
    const created = await json([
      "iam",
      "groups",
      "create",
      "--parent",
      org.uid,
      "--name",
      "team",
      "--description",
      "first",
    ]);
    expect(created).toMatchObject({ name: "team", description: "first" });
    expect((await json(["iam", "groups", "get", created.uid])).name).toBe("team");
    const renamed = await json(["iam", "groups", "update", created.uid, "--name", "team-2"]);
    expect(renamed).toMatchObject({ name: "team-2", description: "first" });
    const cleared = await json(["iam", "groups", "update", created.uid, "--description", ""]);
    expect(cleared.description ?? "").toBe("");
    const listed = await json(["iam", "groups", "list", "--children-of", org.uid]);
    expect(listed.groups.map((g: { name: string }) => g.name)).toContain("team-2");
    const del = await runCli(["iam", "groups", "delete", created.uid], env);
    expect(del).toMatchObject({ code: 0, stdout: `deleted ${created.uid}\n` });
    const gone = await runCli(["iam", "groups", "get", created.uid], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: NotFound: /);
  });

  it("--all follows the pages; a table shows the count", async () => {
    const parent = await json(["iam", "groups", "create", "--parent", org.uid, "--name", "many"]);
    for (let i = 0; i < 120; i++) {
      await gh.store.createGroup({
        uid: `${parent.uid}/${i.toString(16).padStart(16, "0")}`,
        parentUid: parent.uid,
        name: `g${String(i).padStart(3, "0")}`,
        description: "",
        now: Date.now(),
      });
    }
    const page = await json([
      "iam",
      "groups",
      "list",
      "--children-of",
      parent.uid,
      "--page-size",
      "50",
    ]);
    expect(page.groups).toHaveLength(50);
    expect(page.nextPageToken).toBeTruthy();
    const all = await json([
      "iam",
      "groups",
      "list",
      "--children-of",
      parent.uid,
      "--page-size",
      "50",
      "--all",
    ]);
    expect(all.groups).toHaveLength(120);
    expect(all.totalCount).toBe("120");
    expect(all.nextPageToken).toBeUndefined();
    const table = await runCli(
      [
        "iam",
        "groups",
        "list",
        "--children-of",
        parent.uid,
        "--order-by",
        "name desc",
        "--output",
        "table",
      ],
      env,
    );
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^UID\s+NAME\s.*CREATE_TIME\s+UPDATE_TIME$/);
    expect(lines[1]).toContain("g119");
    expect(table.stderr).toMatch(/^50 of 120; next page: --page-token \S+/);
  });

  it("prints the status message and each field violation, exit 1", async () => {
    const r = await runCli(
      ["iam", "groups", "create", "--parent", org.uid, "--name", "x".repeat(300)],
      env,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: InvalidArgument: /);
    expect(r.stderr).toMatch(/\n {2}name: must be at most 256 characters\n$/);
  });

  it("a group with children: the precondition is shown", async () => {
    const parent = await json(["iam", "groups", "create", "--parent", org.uid, "--name", "p"]);
    await json(["iam", "groups", "create", "--parent", parent.uid, "--name", "c"]);
    const r = await runCli(["iam", "groups", "delete", parent.uid], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot delete group with child groups");
    expect(r.stderr).toContain("RESOURCE_NOT_EMPTY");
  });
});

describe("identities, roles and bindings", () => {
  it("creates a workload identity with a claim match and binds roles by name", async () => {
    const identity = await json([
      "iam",
      "identities",
      "create",
      "--parent",
      org.uid,
      "--name",
      "ci",
      "--claim-match.issuer",
      "https://ci.example.com",
      "--claim-match.subject",
      "repo:acme/app",
      "--claim-match.claims",
      "ref=refs/heads/main",
      "--claim-match.claims",
      "env=prod",
    ]);
    expect(identity.claimMatch).toMatchObject({
      issuer: "https://ci.example.com",
      subject: "repo:acme/app",
      claims: { ref: "refs/heads/main", env: "prod" },
    });
    // A built-in role by name.
    const viewer = await json([
      "iam",
      "role-bindings",
      "create",
      "--parent",
      org.uid,
      "--identity-uid",
      identity.uid,
      "--role-uid",
      "viewer",
    ]);
    expect(viewer.role.uid).toBe(builtinRoles.find((r) => r.name === "viewer")?.uid);
    // A custom role by name, found in the organization.
    const role = await json([
      "iam",
      "roles",
      "create",
      "--parent",
      org.uid,
      "--name",
      "deployer",
      "--capabilities",
      "repo.list",
      "--capabilities",
      "tag.list",
    ]);
    expect(role.capabilities).toEqual(["repo.list", "tag.list"]);
    const custom = await json([
      "iam",
      "role-bindings",
      "create",
      "--parent",
      org.uid,
      "--identity-uid",
      identity.uid,
      "--role-uid",
      "deployer",
    ]);
    expect(custom.role).toMatchObject({ uid: role.uid, name: "deployer" });
    const byRole = await json([
      "iam",
      "role-bindings",
      "list",
      "--descendants-of",
      org.uid,
      "--role",
      "deployer",
    ]);
    expect(byRole.roleBindings.map((b: { uid: string }) => b.uid)).toEqual([custom.uid]);
    // The table shows the bound identity and role by name, and no always-empty columns of the
    // input-only identity_uid and role_uid.
    const table = await runCli(
      ["iam", "role-bindings", "list", "--descendants-of", org.uid, "--output", "table"],
      env,
    );
    const header = table.stdout.split("\n")[0]!.split(/\s+/);
    expect(header).toEqual(expect.arrayContaining(["UID", "IDENTITY.NAME", "ROLE.NAME"]));
    expect(header).not.toContain("IDENTITY_UID");
    expect(header).not.toContain("ROLE_UID");
    const unknown = await runCli(
      [
        "iam",
        "role-bindings",
        "create",
        "--parent",
        org.uid,
        "--identity-uid",
        identity.uid,
        "--role-uid",
        "nope",
      ],
      env,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--role-uid: no role named "nope"/);
  });

  it("invites: create shows the code once, another identity redeems it", async () => {
    const invite = await json([
      "iam",
      "invites",
      "create",
      "--parent",
      org.uid,
      "--role-uid",
      "viewer",
      "--ttl",
      "3600s",
    ]);
    expect(invite.code).toBeTruthy();
    expect((await json(["iam", "invites", "get", invite.uid])).code).toBeUndefined();
    const other = await gh.makeOrg("other-org");
    const redeemed = await runCli(["iam", "invites", "redeem", invite.code, "--output", "json"], {
      ...env,
      GATEHOUSE_TOKEN: other.owner.token,
    });
    expect(redeemed.code).toBe(0);
    expect(JSON.parse(redeemed.stdout).group.uid).toBe(org.uid);
  });

  it("invites: create prints the console link; people lists and ends sessions (owners)", async () => {
    const made = await runCli(
      ["iam", "invites", "create", "--parent", org.uid, "--role-uid", "viewer"],
      env,
    );
    expect(made.code).toBe(0);
    const code = new RegExp(`${gh.url}/console/#/invite/([\\w-]+)`).exec(made.stdout)?.[1];
    expect(code).toMatch(/^[\w-]{40,}$/);
    expect(made.stdout).toContain(decodeURIComponent(code!));
    const listed = await runCli(
      ["iam", "people", "--group-uid", org.uid, "--query", "person", "--output", "table"],
      env,
    );
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${org.owner.uid}\t`);
    expect(listed.stdout).toMatch(/\tsign-in\t.*\towner@/);
    const ended = await runCli(
      [
        "iam",
        "end-sessions",
        "--group-uid",
        org.uid,
        "--person-uid",
        org.owner.uid,
        "--output",
        "table",
      ],
      env,
    );
    expect(ended.stdout).toBe("ended 0 session(s)\n");
    const outsider = await gh.makeOrg("outsider-org");
    const refused = await runCli(["iam", "people", "--group-uid", org.uid], {
      ...env,
      GATEHOUSE_TOKEN: outsider.owner.token,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("people.list");
  });
});

describe("durations", () => {
  // `--ttl 5d` was refused with "5d": only protobuf JSON's "432000s" was taken. Every duration
  // flag and setting now reads the same forms.
  it.each([
    ["5d", 5 * 86400],
    ["12h", 12 * 3600],
    ["30m", 30 * 60],
    ["3600s", 3600],
    ["7200", 7200],
  ])("--ttl %s", async (ttl, seconds) => {
    const invite = await json([
      "iam",
      "invites",
      "create",
      "--parent",
      org.uid,
      "--role-uid",
      "viewer",
      "--ttl",
      ttl,
    ]);
    const lived = Date.parse(invite.expirationTime) - Date.parse(invite.createTime);
    expect(Math.round(lived / 1000)).toBe(seconds);
  });

  it("refuses another form, saying which forms it takes", async () => {
    const r = await runCli(
      ["iam", "invites", "create", "--parent", org.uid, "--role-uid", "viewer", "--ttl", "5 days"],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--ttl: not a duration: "5 days" (5d, 12h, 30m, 3600s or plain seconds)',
    );
  });
});

describe("registry and advisories", () => {
  it("repos and tags", async () => {
    const repo = await json(["registry", "repos", "create", "--parent", org.uid, "--name", "app"]);
    const tag = await json([
      "registry",
      "tags",
      "create",
      "--parent",
      repo.uid,
      "--name",
      "v1",
      "--digest",
      `sha256:${"a".repeat(64)}`,
    ]);
    expect(tag).toMatchObject({ name: "v1" });
    const tags = await json(["registry", "tags", "list", "--children-of", repo.uid]);
    expect(tags.tags).toHaveLength(1);
    // --public alone makes a repo public; --public false makes it private again.
    expect(repo.public ?? false).toBe(false);
    const made = await json(["registry", "repos", "update", repo.uid, "--public"]);
    expect(made).toMatchObject({ name: "app", public: true });
    expect((await json(["registry", "repos", "get", repo.uid])).public).toBe(true);
    const back = await json(["registry", "repos", "update", repo.uid, "--public", "false"]);
    expect(back.public ?? false).toBe(false);
    const bad = await runCli(["registry", "repos", "update", repo.uid, "--public", "yes"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--public: expected true or false/);
  });

  it("advisories list answers (empty) with the filters as flags", async () => {
    const r = await json(["advisories", "list", "--descendants-of", org.uid, "--query", "openssl"]);
    expect(r.advisories ?? []).toEqual([]);
  });
});

describe("gatehouse events", () => {
  it("events list answers who made a change, filtered by type", async () => {
    const made = await json(["iam", "groups", "create", "--parent", org.uid, "--name", "audited"]);
    const r = await json([
      "events",
      "list",
      "--children-of",
      made.uid,
      "--type",
      "dev.gatehouse.iam.group.created.v1",
    ]);
    expect(r.events).toHaveLength(1);
    expect(r.events[0]).toMatchObject({
      subject: made.uid,
      data: { actor: { uid: org.owner.uid } },
    });
  });

  // An access review's first step: every role binding event of the last day, every page.
  it("events list --since --type <family> -o jsonl streams every page, one event a line", async () => {
    const group = await json(["iam", "groups", "create", "--parent", org.uid, "--name", "rev"]);
    const viewer = builtinRoles.find((r) => r.name === "viewer")!;
    const granted: string[] = [];
    for (let i = 0; i < 3; i++) {
      const who = await gh.makeIdentity(group.uid);
      const b = await json([
        "iam",
        "role-bindings",
        "create",
        "--parent",
        group.uid,
        "--identity-uid",
        who.uid,
        "--role-uid",
        viewer.uid,
      ]);
      granted.push(b.uid);
    }
    await runCli(["iam", "role-bindings", "delete", granted[0]!], env);
    const argv = ["--since", "24h", "--type", "role_binding", "--descendants-of", group.uid];
    const r = await runCli(["events", "list", ...argv, "--page-size", "2", "-o", "jsonl"], env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((e) => [e.type, e.subject])).toEqual([
      ...granted.map((uid) => ["dev.gatehouse.iam.role_binding.created.v1", uid]),
      ["dev.gatehouse.iam.role_binding.deleted.v1", granted[0]],
    ]);
    expect(lines[3].data.roleBinding.role).toEqual({ uid: viewer.uid, name: "viewer" });
    // Nothing from before the range, nor other families.
    const earlier = ["--type", "role_binding", "--descendants-of", group.uid, "-o", "jsonl"];
    const none = await runCli(
      ["events", "list", ...earlier, "--since", "48h", "--until", "24h"],
      env,
    );
    expect(none).toMatchObject({ code: 0, stdout: "" });
    const backwards = await runCli(["events", "list", ...argv, "--until", "48h"], env);
    expect(backwards.code).toBe(1);
    expect(backwards.stderr).toContain("end_time");
    // export: the same range, every family, oldest first, as JSON Lines whatever -o says.
    const all = await runCli(
      ["events", "export", "--since", "1h", "--descendants-of", group.uid],
      env,
    );
    expect(all.code, all.stderr).toBe(0);
    const exported = all.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(exported.map((e) => e.type)).toEqual([
      "dev.gatehouse.iam.group.created.v1",
      ...granted.map(() => "dev.gatehouse.iam.role_binding.created.v1"),
      "dev.gatehouse.iam.role_binding.deleted.v1",
    ]);
    const bad = await runCli(["events", "list", "--since", "yesterday"], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--since");
  });

  it("gatehouse help shows the audit trail's verbs and the subscriptions' apart", async () => {
    const help = (await runCli(["help"], env)).stdout;
    expect(help).toContain(
      "\n  events list [flags]   (the audit trail: --type, --actor, --since, ...; export: JSON Lines)\n",
    );
    expect(help).toContain("\n  events subscriptions list|get|create|update|delete [flags]\n");
  });

  it("events subscriptions create prints the secret once; list and delete", async () => {
    const created = await runCli(
      [
        "events",
        "subscriptions",
        "create",
        "--parent",
        org.uid,
        "--name",
        "ci hook",
        "--sink",
        "https://hooks.example.com/gatehouse",
        "--event-types",
        "dev.gatehouse.iam.role_binding.created.v1",
        "--event-types",
        "dev.gatehouse.iam.role_binding.deleted.v1",
        "--output",
        "table",
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const secret = /whsec_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0];
    expect(secret, created.stdout).toBeDefined();
    const listed = await json(["events", "subscriptions", "list", "--children-of", org.uid]);
    expect(listed.subscriptions).toHaveLength(1);
    const sub = listed.subscriptions[0];
    expect(sub).toMatchObject({
      name: "ci hook",
      sink: "https://hooks.example.com/gatehouse",
      eventTypes: [
        "dev.gatehouse.iam.role_binding.created.v1",
        "dev.gatehouse.iam.role_binding.deleted.v1",
      ],
    });
    expect(sub.delivery.pendingCount ?? "0").toBe("0");
    const table = await runCli(["events", "subscriptions", "list", "--output", "table"], env);
    expect(table.stdout).toContain("ci hook");
    expect(table.stdout + JSON.stringify(listed)).not.toContain(secret);
    const refused = await runCli(
      [
        "events",
        "subscriptions",
        "create",
        "--parent",
        org.uid,
        "--name",
        "x",
        "--sink",
        "http://10.0.0.1/",
        "--event-types",
        "dev.gatehouse.iam.group.created.v1",
      ],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("sink: must be an https URL");
    const del = await runCli(["events", "subscriptions", "delete", sub.uid], env);
    expect(del).toMatchObject({ code: 0, stdout: `deleted ${sub.uid}\n` });
    expect((await json(["events", "subscriptions", "list"])).subscriptions ?? []).toEqual([]);
  });
});

describe("usage", () => {
  it("exit 3 without a token, 2 for an unknown flag or a bad value, help with exit 0", async () => {
    const none = await runCli(["iam", "groups", "list"], {
      GATEHOUSE_API: gh.url,
      XDG_CONFIG_HOME: "/nonexistent",
    });
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/not logged in/);
    expect((await runCli(["iam", "groups", "list", "--bogus"], env)).code).toBe(2);
    const bad = await runCli(["iam", "groups", "list", "--page-size", "many"], env);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toMatch(/--page-size: not a number/);
    const help = await runCli(["help", "iam", "identities", "create"], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--claim-match.issuer");
    expect((await runCli(["iam", "nothing"], env)).code).toBe(2);
  });

  it("prints a table by default on a terminal, JSON otherwise", async () => {
    let out = "";
    const code = await main(["iam", "groups", "get", org.uid], {
      out: (t) => {
        out += t;
      },
      err: () => {},
      env,
      stdoutIsTty: true,
    });
    expect(code).toBe(0);
    expect(out).toMatch(/^UID\s+NAME/);
    const piped = await runCli(["iam", "groups", "get", org.uid], env);
    expect(JSON.parse(piped.stdout).uid).toBe(org.uid);
  });
});

describe("invite codes on the command line", () => {
  it("never start with '-', which the command line would read as an option", async () => {
    const { newInviteCode } = await import("../../src/services/iam/group-invites.js");
    // 64 in 64 * 20 draws would start with "-" if nothing prevented it (each 1 in 64).
    const codes = Array.from({ length: 64 * 20 }, () => newInviteCode());
    expect(codes.filter((c) => c.startsWith("-"))).toEqual([]);
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes.every((c) => /^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/.test(c))).toBe(true);
  });
});

describe("gatehouse iam check-access and capabilities", () => {
  it("explains a grant and a denial, as sentences and as JSON", async () => {
    const team = await json(["iam", "groups", "create", "--parent", org.uid, "--name", "why"]);
    const ci = await gh.makeIdentity(team.uid, ["viewer"], org.uid);
    const args = ["iam", "check-access", "--identity-uid", ci.uid, "--group-uid", team.uid];
    const allowed = await runCli([...args, "--capability", "repo.list", "--output", "table"], env);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(/^allowed\n {2}granted by role viewer bound at cli-org \(/);
    expect(allowed.stdout).toContain(", inherited");
    // A denial exits 1 (as grep does for no match), and its JSON says "allowed": false.
    const deniedRun = await runCli(
      [...args, "--capability", "repo.create", "--output", "json"],
      env,
    );
    expect(deniedRun.code).toBe(1);
    const denied = JSON.parse(deniedRun.stdout);
    expect(denied.allowed).toBe(false);
    expect(denied.shortfalls[0]).toMatchObject({
      lack: "LACK_CAPABILITY",
      roleBinding: { role: { name: "viewer" }, group: { uid: org.uid } },
    });
    const text = await runCli([...args, "--capability", "repo.create", "--output", "table"], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^denied\n {2}role viewer bound at cli-org .*lacks the capability/);
    const missing = await runCli(["iam", "check-access", "--group-uid", team.uid], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--identity-uid is required/);
    const unknown = await runCli([...args, "--capability", "repo.fly"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/InvalidArgument/);
  });

  it("lists the caller's own capabilities at a group", async () => {
    const run = await runCli(
      ["iam", "capabilities", "--group-uid", org.uid, "--output", "table"],
      env,
    );
    expect(run.code).toBe(0);
    const caps = run.stdout
      .trim()
      .split("\n")
      .map((l) => l.split(" ")[0]);
    expect(caps).toContain("role_bindings.create");
    expect(caps).not.toContain("advisories.create");
  });
});
