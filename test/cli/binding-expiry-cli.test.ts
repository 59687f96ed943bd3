import { describe, expect, it } from "vitest";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";

// `--for <duration>` on the role-binding commands: an expiry as a person thinks of it, sent as
// expireTime; `--until-revoked` clears it. Through the command line against a real server.

const hour = 3_600_000;

const { gh, org, env, json } = useCliSuite("cli-expiry");

describe("gatehouse iam role-bindings --for", () => {
  it("creates a binding that expires, moves its expiry, and makes it last until revoked", async () => {
    const worker = await gh.makeIdentity(org.uid);
    const bind = ["iam", "role-bindings", "create", "--parent", org.uid];
    const before = Date.now();
    const made = await json([
      ...bind,
      "--identity-uid",
      worker.uid,
      "--role-uid",
      "viewer",
      "--for",
      "8h",
    ]);
    const after = Date.now();
    const at = Date.parse(made.expireTime);
    expect(at).toBeGreaterThanOrEqual(before + 8 * hour - 1000);
    expect(at).toBeLessThanOrEqual(after + 8 * hour);

    const listed = await runCli(
      ["iam", "role-bindings", "list", "--identity", worker.uid, "--output", "table"],
      env,
    );
    expect(listed.stdout.split("\n")[0]).toContain("EXPIRE_TIME");
    expect(listed.stdout).toContain(made.expireTime.slice(0, 16));

    const moved = await json(["iam", "role-bindings", "update", made.uid, "--for", "1d"]);
    expect(Date.parse(moved.expireTime)).toBeGreaterThan(at + 15 * hour);
    expect(moved.role.name).toBe("viewer");
    const lasting = await json(["iam", "role-bindings", "update", made.uid, "--until-revoked"]);
    expect(lasting.expireTime).toBeUndefined();
  });

  it.each([
    [["--for", "soon"], /--for: not a duration/],
    [["--for", "0"], /--for: not a duration/],
    [["--for", "1h", "--expire-time", "2030-01-01T00:00:00Z"], /one of --for, --expire-time/],
  ])("refuses %j as a usage error", async (flags, message) => {
    const worker = await gh.makeIdentity(org.uid);
    const r = await runCli(
      [
        "iam",
        "role-bindings",
        "create",
        "--parent",
        org.uid,
        "--identity-uid",
        worker.uid,
        "--role-uid",
        "viewer",
        ...flags,
      ],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("an expiry the server refuses is the server's INVALID_ARGUMENT, named", async () => {
    const worker = await gh.makeIdentity(org.uid);
    const r = await runCli(
      [
        "iam",
        "role-bindings",
        "create",
        "--parent",
        org.uid,
        "--identity-uid",
        worker.uid,
        "--role-uid",
        "viewer",
        "--for",
        "400d",
      ],
      env,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/expireTime: may lie at most 366 days ahead/);
  });
});
