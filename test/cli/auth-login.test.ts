import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { personUid, providerPersonUid } from "../../src/auth/login/person.js";
import { restCall } from "../helpers/rest-client.js";
import { runBin } from "../helpers/run-bin.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestIdp } from "../helpers/test-idp.js";
import { startTestServer } from "../helpers/test-server.js";
import { useAuthCliSuite } from "./auth-cli-suite.js";

// `gatehouse auth`, the package's executable (bin/gatehouse.js) run as a child process: the
// browser sign-in (the test plays the person's browser), the stored tokens, the resource
// commands with them, silent refresh, logout. auth-login-more.test.ts: the device code
// sign-in, the seed's workload login with a token file, races and a hostile server.

const suite = useAuthCliSuite();
const { gh, idp, env, gatehouse, credentialsFile, stored } = suite;
const { expireStoredToken, refreshAtServer, loginAs } = suite;

describe("gatehouse auth, a person", { timeout: 60_000 }, () => {
  it("logs in through the browser, lists the organization's groups, refreshes silently, and logs out", async () => {
    const login = await loginAs("alice");
    expect(login.stderr).toContain("Open this URL in a browser");
    expect(login.code).toBe(0);
    const uid = personUid(idp.issuer, "alice");
    expect(login.stdout).toContain(`Logged in to ${gh.url} as Alice <alice@example.com> (${uid})`);
    expect(statSync(credentialsFile()).mode & 0o777).toBe(0o600);
    expect(statSync(join(credentialsFile(), "..")).mode & 0o777).toBe(0o700);
    const first = stored();
    expect(first).toMatchObject({ kind: "person", identity: uid });
    // What is kept is the server's: the stored access token is the caller.
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${first.accessToken}`,
    });
    expect(me.json.identity.uid).toBe(uid);

    // The person creates an organization and a group in it, and lists its groups.
    const org = await gatehouse(["iam", "groups", "create", "--name", "alice-org", "-o", "json"]);
    expect(org.code).toBe(0);
    const orgUid = JSON.parse(org.stdout).uid as string;
    const team = await gatehouse(["iam", "groups", "create", "--parent", orgUid, "--name", "team"]);
    expect(team.code).toBe(0);
    const groups = await gatehouse(["iam", "groups", "list", "--descendants-of", orgUid]);
    expect(groups.code).toBe(0);
    expect(JSON.parse(groups.stdout).groups.map((g: { name: string }) => g.name)).toEqual(["team"]);
    const status = await gatehouse(["auth", "status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`owner at alice-org (${orgUid})`);

    // The access token has expired (as far as the CLI knows): `auth token` refreshes it.
    expireStoredToken();
    const refreshed = await gatehouse(["auth", "token"]);
    expect(refreshed.code).toBe(0);
    const newToken = refreshed.stdout.trim();
    expect(newToken).not.toBe(first.accessToken);
    const second = stored();
    expect(second.accessToken).toBe(newToken);
    expect(second.refreshToken).not.toBe(first.refreshToken);
    const again = await gatehouse(["iam", "groups", "get", orgUid, "-o", "json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).name).toBe("alice-org");

    const logout = await gatehouse(["auth", "logout"]);
    expect(logout).toMatchObject({ code: 0 });
    expect(logout.stdout).toContain(`Logged out of ${gh.url}`);
    expect(() => statSync(credentialsFile())).toThrow(/ENOENT/);
    // The server revoked the session: its refresh token is refused, its access token too.
    expect((await refreshAtServer(second.refreshToken)).error).toBe("invalid_grant");
    const after = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${newToken}`,
    });
    expect(after.status).toBe(401);
    // Not logged in any more: exit code 3.
    const none = await gatehouse(["auth", "token"]);
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/not logged in/);
    expect((await gatehouse(["iam", "groups", "list"])).code).toBe(3);
  });

  it("a session ended at the server is 'not logged in' (exit 3), also after the identity is deleted", async () => {
    expect((await loginAs("dave")).code).toBe(0);
    // Logged out elsewhere: the stored access token is refused by the API.
    const revoked = await fetch(`${gh.url}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: stored().refreshToken, client_id: "gatehouse-cli" }),
    });
    expect(revoked.status).toBe(200);
    const list = await gatehouse(["iam", "groups", "list"]);
    expect(list.code).toBe(3);
    expect(list.stderr).toMatch(/SESSION_REVOKED/);
    expect(list.stderr).toMatch(/run gatehouse auth login/);
    const status = await gatehouse(["auth", "status"]);
    expect(status.code).toBe(3);
    expect(status.stderr).toMatch(/run gatehouse auth login/);

    // Signed in again; then the identity is deleted: the refresh is refused, the login forgotten.
    expect((await loginAs("dave")).code).toBe(0);
    await gh.store.deleteIdentity(personUid(idp.issuer, "dave"));
    expireStoredToken();
    const token = await gatehouse(["auth", "token"]);
    expect(token.code).toBe(3);
    expect(token.stderr).toMatch(/session .* has ended .*: run gatehouse auth login/);
    expect(() => statSync(credentialsFile())).toThrow(/ENOENT/);
  });

  it("--identity-provider signs a person in through an organization's own provider", async () => {
    const orgIdp = await startTestIdp({
      redirectUri: `${gh.url}/oauth/callback`,
      people: { erin: { name: "Erin", email: "erin@acme.test", email_verified: true } },
    });
    try {
      const org = await gh.makeOrg("acme");
      const created = await restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/identityProviders/${org.uid}`,
        {
          name: "Acme SSO",
          emailDomains: ["acme.test"],
          defaultRole: builtinRoles.find((r) => r.name === "viewer")?.uid,
          oidc: {
            issuer: orgIdp.issuer,
            clientId: orgIdp.clientId,
            clientSecret: orgIdp.clientSecret,
          },
        },
        org.owner.headers,
      );
      expect(created.status).toBe(200);
      orgIdp.setRedirectUris([`${gh.url}/oauth/idp-callback/${created.json.uid}`]);
      // An email domain nobody verified is only listed: anyone may claim one.
      const byDomain = await gatehouse([
        "auth",
        "login",
        "--no-browser",
        "--identity-provider",
        "erin@acme.test",
      ]);
      expect(byDomain.code).toBe(2);
      expect(byDomain.stderr).toContain(
        `${created.json.uid}  Acme SSO (organization acme, domain not verified)`,
      );
      // By its name, as a person types it.
      const login = await loginAs("erin", ["--identity-provider", "Acme SSO"]);
      expect(login.code).toBe(0);
      expect(login.stderr).toContain(
        `Signing in through Acme SSO (organization acme, ${created.json.uid})`,
      );
      // A person of that provider's own; its word on the email is not believed.
      expect(login.stdout).toContain(
        `as Erin (${providerPersonUid(created.json.uid, orgIdp.issuer, "erin")})`,
      );
      // The provider's default role at its organization: Erin sees it from the CLI.
      const groups = await gatehouse(["iam", "groups", "get", org.uid, "-o", "json"]);
      expect(groups.code).toBe(0);
      expect(JSON.parse(groups.stdout).name).toBe("acme");
      const status = await gatehouse(["auth", "status"]);
      expect(status.stdout).toContain(`viewer at acme (${org.uid})`);
      expect((await gatehouse(["auth", "logout"])).code).toBe(0);
    } finally {
      await orgIdp.close();
    }
  });

  it("an interrupted sign-in removes its sign-in page (it holds the state)", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "gatehouse-cli-tmp-"));
    const pages = () => readdirSync(tmp).filter((f) => f.startsWith("gatehouse-login-"));
    try {
      let child: ChildProcess | undefined;
      const run = runBin(
        ["auth", "login"],
        { ...env, TMPDIR: tmp, BROWSER: "true" },
        {
          timeoutMs: 30_000,
          onStart: (c) => {
            child = c;
          },
        },
      );
      while (pages().length === 0) await new Promise((r) => setTimeout(r, 20));
      child?.kill("SIGINT");
      const done = await run;
      expect(done.code).toBe(128); // ended by the signal, as without a handler
      expect(pages()).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("a failed sign-in at the provider exits 1 with the reason, storing nothing", async () => {
    idp.tamperIdToken((c) => ({ ...c, aud: "someone-else" }));
    try {
      const login = await loginAs("alice");
      expect(login.code).toBe(1);
      expect(login.stderr).toMatch(/sign-in failed: the identity provider's answer was refused/);
      expect((await gatehouse(["auth", "token"])).code).toBe(3);
    } finally {
      idp.tamperIdToken(undefined);
    }
  });

  it("refuses an answer naming another issuer (mix-up), storing nothing", async () => {
    const login = await loginAs("alice", [], (back) => {
      const forged = new URL(back);
      forged.searchParams.set("iss", "http://127.0.0.1:1");
      return forged;
    });
    expect(login.code).toBe(1);
    expect(login.stderr).toMatch(/sign-in failed: the answer comes from "http:\/\/127\.0\.0\.1:1"/);
    expect((await gatehouse(["auth", "token"])).code).toBe(3);
  });

  it("says at once when the server has no login provider", async () => {
    const plain = await startTestServer();
    try {
      const login = await runBin(["auth", "login", "--no-browser", "--api", plain.url], env, {
        timeoutMs: 15_000,
      });
      expect(login.code).toBe(1);
      expect(login.stderr).toMatch(/has no login provider for people: .*--identity-provider/);
      expect(login.stderr).not.toMatch(/Open this URL/);
    } finally {
      await plain.close();
    }
  });

  it("a token endpoint answering with something else than JSON is a clear error, exit 1", async () => {
    // A proxy in front of the server answers its own error page.
    const proxy = createServer((_req, res) => {
      res.writeHead(502, { "content-type": "text/html" }).end("<html>Bad Gateway</html>");
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/oauth/token`;
      mkdirSync(join(credentialsFile(), ".."), { recursive: true, mode: 0o700 });
      writeFileSync(
        credentialsFile(),
        JSON.stringify({
          version: 1,
          servers: {
            [gh.url]: {
              kind: "person",
              identity: "x",
              accessToken: "expired",
              expiry: new Date(0).toISOString(),
              refreshToken: "gatehouse_rt_x",
              tokenEndpoint: endpoint,
            },
          },
        }),
        { mode: 0o600 },
      );
      const token = await gatehouse(["auth", "token"]);
      expect(token.code).toBe(1);
      expect(token.stderr).toBe(
        `gatehouse auth: ${endpoint} answered HTTP 502 with something that is not an OAuth answer\n`,
      );
    } finally {
      proxy.close();
      rmSync(credentialsFile(), { force: true });
    }
  });

  it("refuses usage errors with exit 2", async () => {
    // Refused by main() before it reads a file or the network, the same code in this process
    // as in the executable's (a child process a command cost 2-3 s of this file on a loaded
    // machine); the tests above see its exit codes go through bin/gatehouse.js.
    const cli = (argv: string[]) => runCli(argv, env);
    const login = await cli(["auth", "login", "--identity", "x"]);
    expect(login.code).toBe(2);
    expect(login.stderr).toMatch(/--identity and --identity-token go together/);
    expect((await cli(["auth", "token", "--no-browser"])).code).toBe(2);
    expect((await cli(["auth", "whoami"])).code).toBe(2);
    expect((await cli(["auth", "token", "--api", "ftp://x"])).code).toBe(2);
  });
});
