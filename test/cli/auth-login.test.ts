import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/auth/login/person.js";
import { main } from "../../src/cli/main.js";
import { newChildUid } from "../../src/uid.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { restCall } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// `gatehouse auth`: the browser sign-in (the test plays the person's browser), the stored
// tokens, silent refresh, logout; and the seed's workload login with a token file.

let gh: TestServer;
let idp: TestIdp;
let workloads: OidcIssuer;
let env: Record<string, string>;

function credentialsFile(): string {
  return join(env.XDG_CONFIG_HOME as string, "gatehouse", "credentials.json");
}

// biome-ignore lint/suspicious/noExplicitAny: the JSON file as the test reads it
function stored(): any {
  return JSON.parse(readFileSync(credentialsFile(), "utf8")).servers[gh.url];
}

/**
 * `gatehouse auth login --no-browser`, with the test as the browser: when the CLI prints the
 * URL, sign in at the identity provider as `account` and deliver the redirect to the CLI's
 * loopback listener, as a browser would.
 */
async function loginAs(account: string, args: string[] = []) {
  let stdout = "";
  let stderr = "";
  let browser: Promise<void> | undefined;
  const code = await main(["auth", "login", "--no-browser", ...args], {
    out: (t) => {
      stdout += t;
    },
    err: (t) => {
      stderr += t;
      const printed = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)/.exec(t)?.[1];
      if (printed && !browser) {
        const redirect = new URL(printed).searchParams.get("redirect_uri") as string;
        browser = (async () => {
          const back = await signInAtIdp(printed, account, redirect);
          await (await fetch(back)).text();
        })();
      }
    },
    env,
  });
  await browser;
  return { code, stdout, stderr };
}

beforeAll(async () => {
  const port = await freePort();
  idp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: { alice: { name: "Alice", email: "alice@example.com", email_verified: true } },
  });
  workloads = await startOidcIssuer();
  gh = await startTestServer(
    {
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    },
    { port },
  );
  env = {
    GATEHOUSE_API: gh.url,
    XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "gatehouse-cli-")),
  };
});

afterAll(async () => {
  await gh?.close();
  await idp?.close();
  await workloads?.stop();
});

describe("gatehouse auth, a person", () => {
  it("logs in through the browser, refreshes silently, and logs out", async () => {
    const login = await loginAs("alice");
    expect(login.stderr).toContain("Open this URL in a browser");
    expect(login.code).toBe(0);
    const uid = personUid(idp.issuer, "alice");
    expect(login.stdout).toContain(`Logged in to ${gh.url} as Alice <alice@example.com> (${uid})`);
    expect(statSync(credentialsFile()).mode & 0o777).toBe(0o600);
    expect(statSync(join(credentialsFile(), "..")).mode & 0o777).toBe(0o700);
    const first = stored();
    expect(first).toMatchObject({ kind: "person", identity: uid });

    // The person creates an organization with the token the CLI prints.
    const token = await runCli(["auth", "token"], env);
    expect(token.code).toBe(0);
    const org = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groups",
      { name: "alice-org" },
      { authorization: `Bearer ${token.stdout.trim()}` },
    );
    expect(org.status).toBe(200);
    // The resource commands use the stored login.
    const groups = await runCli(["iam", "groups", "list", "--output", "json"], env);
    expect(groups.code).toBe(0);
    expect(JSON.parse(groups.stdout).groups.map((g: { uid: string }) => g.uid)).toEqual([
      org.json.uid,
    ]);
    const status = await runCli(["auth", "status"], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`owner at alice-org (${org.json.uid})`);

    // The access token has expired (as far as the CLI knows): `auth token` refreshes it.
    writeFileSync(
      credentialsFile(),
      JSON.stringify({
        version: 1,
        servers: { [gh.url]: { ...first, expiry: new Date(Date.now() - 1000).toISOString() } },
      }),
      { mode: 0o600 },
    );
    const refreshed = await runCli(["auth", "token"], env);
    const afterRefresh = await runCli(
      ["iam", "groups", "get", org.json.uid, "--output", "json"],
      env,
    );
    expect(afterRefresh.code).toBe(0);
    expect(refreshed.code).toBe(0);
    expect(refreshed.stdout.trim()).not.toBe(first.accessToken);
    const second = stored();
    expect(second.refreshToken).not.toBe(first.refreshToken);
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${refreshed.stdout.trim()}`,
    });
    expect(me.json.identity.uid).toBe(uid);

    const logout = await runCli(["auth", "logout"], env);
    expect(logout).toMatchObject({ code: 0 });
    expect(logout.stdout).toContain(`Logged out of ${gh.url}`);
    // The server revoked the session: its refresh token is refused, its access token too.
    const res = await fetch(`${gh.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: second.refreshToken,
        client_id: "gatehouse-cli",
      }),
    });
    expect(((await res.json()) as { error: string }).error).toBe("invalid_grant");
    const after = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${refreshed.stdout.trim()}`,
    });
    expect(after.status).toBe(401);
    // Not logged in any more: exit code 3.
    const none = await runCli(["auth", "token"], env);
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/not logged in/);
  });

  it("a failed sign-in at the provider exits 1 with the reason, storing nothing", async () => {
    idp.tamperIdToken((c) => ({ ...c, aud: "someone-else" }));
    try {
      const login = await loginAs("alice");
      expect(login.code).toBe(1);
      expect(login.stderr).toMatch(/sign-in failed: .*"aud"/);
      expect((await runCli(["auth", "token"], env)).code).toBe(3);
    } finally {
      idp.tamperIdToken(undefined);
    }
  });

  it("refuses usage errors with exit 2", async () => {
    expect((await runCli(["auth", "login", "--identity", "x"], env)).code).toBe(2);
    expect((await runCli(["auth", "token", "--no-browser"], env)).code).toBe(2);
    expect((await runCli(["auth", "whoami"], env)).code).toBe(2);
    expect((await runCli(["auth", "token", "--api", "ftp://x"], env)).code).toBe(2);
  });
});

describe("gatehouse auth, a workload", () => {
  it("logs in with an identity and a token file, and exchanges the file again when expired", async () => {
    const org = await gh.makeOrg("workloads");
    const identity = await gh.store.createIdentity({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      name: "deployer",
      description: "",
      claimMatch: {
        issuer: workloads.url,
        issuerPattern: "",
        subject: "deployer",
        subjectPattern: "",
        audience: "",
        audiencePattern: "",
        claims: {},
        claimPatterns: {},
      },
      now: Date.now(),
    });
    const file = join(env.XDG_CONFIG_HOME as string, "oidc-token");
    writeFileSync(file, await workloads.issue({ sub: "deployer", aud: gh.url }));
    const login = await runCli(
      ["auth", "login", "--identity", identity.uid, "--identity-token", file],
      env,
    );
    expect(login.stderr).toBe("");
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(`as deployer (${identity.uid})`);
    const first = stored();
    expect(first).toMatchObject({ kind: "workload", identity: identity.uid });

    // The platform rotated the file; the stored token expired: `auth token` exchanges again.
    writeFileSync(file, await workloads.issue({ sub: "deployer", aud: gh.url }));
    writeFileSync(
      credentialsFile(),
      JSON.stringify({
        version: 1,
        servers: { [gh.url]: { ...first, expiry: new Date(0).toISOString() } },
      }),
      { mode: 0o600 },
    );
    const token = await runCli(["auth", "token"], env);
    expect(token.code).toBe(0);
    expect(token.stdout.trim()).not.toBe(first.accessToken);

    // A token for another subject is refused, with the server's message and exit 1.
    writeFileSync(file, await workloads.issue({ sub: "intruder", aud: gh.url }));
    const refused = await runCli(
      ["auth", "login", "--identity", identity.uid, "--identity-token", file],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/exchange was refused: .*cannot be exchanged/);
    await runCli(["auth", "logout"], env);
  });
});
