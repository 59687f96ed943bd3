import { decodeJwt } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { useCliSuite } from "../helpers/cli-suite.js";
import { runCli } from "../helpers/run-cli.js";
import { freePort } from "../helpers/test-server.js";

// `gatehouse auth pull-token create|list|delete` against a real server: the token it prints
// is taken by the registry token endpoint (as docker login sends it: Basic, the identity's uid
// and the token) for pull and nothing more, until the binding's expiry; the server's clock is
// injected and moved past it.

const pullRole = builtinRoles.find((r) => r.name === "registry.pull")!;
const day = 86_400_000;
let service: string;
const clock = { t: Date.now() };

const { gh, org, env } = useCliSuite(
  "pulls",
  async () => {
    service = `127.0.0.1:${await freePort()}`;
    return { GATEHOUSE_REGISTRY_AUDIENCE: service };
  },
  { now: () => clock.t },
);
beforeAll(async () => {
  const repo = await fetch(`${gh.url}/registry/v2beta1/repos/${org.uid}`, {
    method: "POST",
    headers: { ...org.owner.headers, "content-type": "application/json" },
    body: JSON.stringify({ name: "app" }),
  });
  expect(repo.status).toBe(200);
});

/** What the token endpoint grants `user`/`password` on pulls/app for pull and push. */
async function granted(user: string, password: string) {
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const res = await fetch(
    `${gh.config.authUrl}/registry/token?service=${service}&scope=repository:pulls/app:pull,push`,
    { headers: { authorization: auth } },
  );
  if (res.status !== 200) return res.status;
  const access = decodeJwt(((await res.json()) as { token: string }).token).access as {
    actions: string[];
  }[];
  return access[0]?.actions;
}

describe("gatehouse auth pull-token", () => {
  it("creates a token docker login takes for pull only, lists it, and it ends at its expiry", async () => {
    const made = await runCli(
      ["auth", "pull-token", "create", "--parent", "pulls", "--registry", service, "--for", "30d"],
      env,
    );
    expect(made.code, made.stderr).toBe(0);
    const m = /^docker login (\S+) --username (\S+) --password (\S+)\n$/.exec(made.stdout);
    expect(m, made.stdout).not.toBeNull();
    const [, registry, uid, password] = m!;
    expect(registry).toBe(service);
    expect(made.stderr).toContain(`pull token ${uid} for ${org.uid}`);
    // The identity and its binding: registry.pull, expiring with the token.
    const bindings = await runCli(
      ["iam", "role-bindings", "list", "--identity", uid!, "--output", "json"],
      env,
    );
    const [binding] = JSON.parse(bindings.stdout).roleBindings;
    expect(binding.role.uid).toBe(pullRole.uid);
    const expires = Date.parse(binding.expireTime);
    expect(Math.abs(expires - (decodeJwt(password!).exp as number) * 1000)).toBeLessThan(1000);
    expect(expires - clock.t).toBeGreaterThan(29 * day);

    expect(await granted(uid!, password!)).toEqual(["pull"]);
    // The token is the identity's alone.
    const other = await gh.makeIdentity(org.uid);
    expect(await granted(other.uid, password!)).toBe(401);

    const listed = await runCli(["auth", "pull-token", "list", "--parent", org.uid], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^${uid}\\s+pull token \\S+\\s+${binding.expireTime.slice(0, 19)}`, "m"),
    );
    expect(listed.stdout).not.toContain(other.uid);

    // Past its expiry the binding grants nothing (the token's own exp has passed too).
    clock.t = expires + 1;
    expect(await granted(uid!, password!)).not.toEqual(["pull"]);
    clock.t = Date.now();
  });

  it("deletes a pull token, and only a pull token", async () => {
    const made = await runCli(
      ["auth", "pull-token", "create", "--parent", org.uid, "--registry", service, "--for", "1h"],
      env,
    );
    const [, uid, password] = /--username (\S+) --password (\S+)/.exec(made.stdout)!;
    expect(await granted(uid!, password!)).toEqual(["pull"]);
    const other = await gh.makeIdentity(org.uid);
    const refused = await runCli(["auth", "pull-token", "delete", other.uid], env);
    expect(refused).toMatchObject({ code: 2 });
    expect(refused.stderr).toContain("is not a pull token");
    const del = await runCli(["auth", "pull-token", "delete", uid!], env);
    expect(del).toMatchObject({ code: 0, stdout: `deleted pull token ${uid}\n` });
    expect(await granted(uid!, password!)).toBe(401);
  });

  it.each([
    [["--for", "400d"], /at most 365d/],
    [["--for", "soon"], /not a duration/],
  ])("refuses %j as a usage error", async (flags, message) => {
    const r = await runCli(
      ["auth", "pull-token", "create", "--parent", org.uid, "--registry", service, ...flags],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("a caller who may not make identities there is refused", async () => {
    const creator = await gh.makeIdentity(org.uid, ["viewer"]);
    const r = await runCli(
      ["auth", "pull-token", "create", "--parent", org.uid, "--registry", service],
      { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: creator.token },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/PermissionDenied/);
  });

  it("refused the binding, it deletes the identity it made: nothing is left half made", async () => {
    const role = await fetch(`${gh.url}/iam/v2beta1/roles/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({
        name: "maker",
        capabilities: ["identities.create", "identities.delete", "identities.list"],
      }),
    });
    expect(role.status).toBe(200);
    const maker = await gh.makeIdentity(org.uid, [((await role.json()) as { uid: string }).uid]);
    const makerEnv = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: maker.token };
    const before = await runCli(["auth", "pull-token", "list", "--parent", org.uid], makerEnv);
    const r = await runCli(
      ["auth", "pull-token", "create", "--parent", org.uid, "--registry", service],
      makerEnv,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/PermissionDenied/);
    const after = await runCli(["auth", "pull-token", "list", "--parent", org.uid], makerEnv);
    expect(after.stdout).toBe(before.stdout);
  });
});
