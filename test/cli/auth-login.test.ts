import type { ChildProcess } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallerSchema } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { personUid, providerPersonUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { decideUserCode } from "../helpers/device-sign-in.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { restCall } from "../helpers/rest-client.js";
import { runBin } from "../helpers/run-bin.js";
import { runCli } from "../helpers/run-cli.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// `gatehouse auth`, the package's executable (bin/gatehouse.js) run as a child process: the
// browser sign-in (the test plays the person's browser), the stored tokens, the resource
// commands with them, silent refresh, logout; and the seed's workload login with a token file.

let gh: TestServer;
let idp: TestIdp;
let workloads: OidcIssuer;
let env: Record<string, string>;

const gatehouse = (argv: string[], extraEnv: Record<string, string> = {}) =>
  runBin(argv, { ...env, ...extraEnv });

function credentialsFile(): string {
  return join(env.XDG_CONFIG_HOME as string, "gatehouse", "credentials.json");
}

// biome-ignore lint/suspicious/noExplicitAny: the JSON file as the test reads it
function stored(): any {
  return JSON.parse(readFileSync(credentialsFile(), "utf8")).servers[gh.url];
}

/** Make the stored access token look expired to the CLI, as an hour later would. */
function expireStoredToken() {
  const file = JSON.parse(readFileSync(credentialsFile(), "utf8"));
  file.servers[gh.url].expiry = new Date(Date.now() - 1000).toISOString();
  writeFileSync(credentialsFile(), JSON.stringify(file), { mode: 0o600 });
}

const refreshAtServer = (refreshToken: string) =>
  fetch(`${gh.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: "gatehouse-cli",
    }),
  }).then((r) => r.json() as Promise<{ error?: string; access_token?: string }>);

/**
 * `gatehouse auth login --no-browser`, with the test as the browser: when the CLI prints the
 * URL, sign in at the identity provider as `account` and deliver the redirect to the CLI's
 * loopback listener, as a browser would (`deliver` may change it first).
 */
async function loginAs(
  account: string,
  args: string[] = [],
  deliver: (back: URL) => URL = (back) => back,
) {
  let stderr = "";
  let browser: Promise<void> | undefined;
  const run = runBin(["auth", "login", "--no-browser", ...args], env, {
    timeoutMs: 30_000,
    onStderr: (t) => {
      stderr += t;
      const printed = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\s/.exec(stderr)?.[1];
      if (printed && !browser) {
        const redirect = new URL(printed).searchParams.get("redirect_uri") as string;
        browser = (async () => {
          const back = await signInAtIdp(printed, account, redirect);
          await (await fetch(deliver(back))).text();
        })();
      }
    },
  });
  const result = await run;
  await browser;
  return result;
}

/**
 * `gatehouse auth login --headless`, with the test as the person on another device: when the
 * CLI prints the user code, enter it at the verification page, sign in as `account` and press
 * `decision`.
 */
async function loginHeadless(account: string, decision: "approve" | "deny") {
  let stderr = "";
  let person: Promise<unknown> | undefined;
  const run = runBin(["auth", "login", "--headless"], env, {
    timeoutMs: 30_000,
    onStderr: (t) => {
      stderr += t;
      const code = /enter the code\s+([A-Z]{4}-[A-Z]{4})\s/.exec(stderr)?.[1];
      if (code && !person) person = decideUserCode(gh.url, code, account, decision);
    },
  });
  const result = await run;
  await person;
  return result;
}

beforeAll(async () => {
  const port = await freePort();
  idp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: {
      alice: { name: "Alice", email: "alice@example.com", email_verified: true },
      // Holds no roles, so that deleting the identity is not refused (alice owns an org).
      dave: { name: "Dave" },
    },
  });
  workloads = await startOidcIssuer();
  gh = await startTestServer(
    {
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      // The organization's provider of a test below runs on 127.0.0.1.
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      // `auth login --headless` polls every second instead of every five.
      GATEHOUSE_DEVICE_CODE_INTERVAL: "1s",
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

  it("--headless signs in by a code approved on another device (RFC 8628), or stops when denied", async () => {
    const denied = await loginHeadless("alice", "deny");
    expect(denied.stderr).toContain(`open this URL on any device:\n\n  ${gh.url}/oauth/device\n`);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain("sign-in denied");
    expect(() => statSync(credentialsFile())).toThrow(/ENOENT/);
    const login = await loginHeadless("alice", "approve");
    expect(login.code).toBe(0);
    const uid = personUid(idp.issuer, "alice");
    expect(login.stdout).toContain(`Logged in to ${gh.url} as Alice <alice@example.com> (${uid})`);
    expect(stored()).toMatchObject({ kind: "person", identity: uid });
    const status = await gatehouse(["auth", "status"]);
    expect(status.code).toBe(0);
    expect((await gatehouse(["auth", "logout"])).code).toBe(0);
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

describe("gatehouse auth, a workload", { timeout: 60_000 }, () => {
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
    const login = await gatehouse([
      "auth",
      "login",
      "--identity",
      identity.uid,
      "--identity-token",
      file,
    ]);
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
    const token = await gatehouse(["auth", "token"]);
    expect(token.code).toBe(0);
    expect(token.stdout.trim()).not.toBe(first.accessToken);

    // A token for another subject is refused, with the server's message and exit 1.
    writeFileSync(file, await workloads.issue({ sub: "intruder", aud: gh.url }));
    const refused = await gatehouse([
      "auth",
      "login",
      "--identity",
      identity.uid,
      "--identity-token",
      file,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/exchange was refused: .*cannot be exchanged/);
    await gatehouse(["auth", "logout"]);
  });
});

describe("gatehouse auth against races and a hostile server (issue 23)", {
  timeout: 60_000,
}, () => {
  it("parallel commands at the token's refresh share one refresh: the session lives on", async () => {
    expect((await loginAs("alice")).code).toBe(0);
    // The token endpoint, behind a gate that holds refreshes until all 5 commands have sent
    // theirs (or 3 s after the first): every command that refreshes does so at once.
    const held: Array<() => void> = [];
    let refreshes = 0;
    const release = () => {
      for (const go of held.splice(0)) go();
    };
    const gate = createServer((req, res) => {
      refreshes++;
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        held.push(() => {
          fetch(`${gh.url}/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: Buffer.concat(chunks),
          }).then(async (r) => {
            res.writeHead(r.status, { "content-type": "application/json" }).end(await r.text());
          });
        });
        if (held.length === 1) setTimeout(release, 3_000);
        if (held.length >= 5) release();
      });
    });
    await new Promise<void>((r) => gate.listen(0, "127.0.0.1", r));
    const file = JSON.parse(readFileSync(credentialsFile(), "utf8"));
    file.servers[gh.url].tokenEndpoint =
      `http://127.0.0.1:${(gate.address() as AddressInfo).port}/token`;
    file.servers[gh.url].expiry = new Date(Date.now() - 1000).toISOString();
    writeFileSync(credentialsFile(), JSON.stringify(file), { mode: 0o600 });
    const runs = await Promise.all(Array.from({ length: 5 }, () => gatehouse(["auth", "token"])));
    gate.close();
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 0]);
    // One refresh: every process printed the token it stored.
    expect(refreshes).toBe(1);
    expect(new Set(runs.map((r) => r.stdout.trim())).size).toBe(1);
    expect(stored().accessToken).toBe(runs[0]!.stdout.trim());
    expect((await gatehouse(["auth", "status"])).code).toBe(0);
    expect((await gatehouse(["auth", "logout"])).code).toBe(0);
  });

  /** A script standing in for the person's browser: it records what the opener gave it. */
  function fakeBrowser() {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-browser-"));
    const record = join(dir, "opened");
    const script = join(dir, "browser.sh");
    writeFileSync(script, `#!/bin/sh\nprintf '%s\\n' "$@" >> '${record}'\n`, { mode: 0o700 });
    const opened = () => {
      try {
        return readFileSync(record, "utf8").trim();
      } catch {
        return undefined;
      }
    };
    // No desktop: xdg-open hands the URL or file to $BROWSER.
    return { env: { BROWSER: script, DISPLAY: "", WAYLAND_DISPLAY: "" }, opened };
  }

  it("the opener is given a private file, never the URL with the sign-in's state", async () => {
    const browser = fakeBrowser();
    const run = gatehouse(["auth", "login"], browser.env);
    let opened: string | undefined;
    for (let i = 0; i < 500 && !opened; i++) {
      await new Promise((r) => setTimeout(r, 20));
      opened = browser.opened();
    }
    expect(opened).toBeDefined();
    // What another local user can read of the opener's command line: no state, no challenge.
    expect(opened).not.toMatch(/state=|code_challenge|oauth\/authorize/);
    const file = opened!.replace(/^file:\/\//, "");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, "..")).mode & 0o777).toBe(0o700);
    // The person's browser follows the page on to the sign-in.
    const page = readFileSync(file, "utf8");
    const href = /url=([^"]+)"/.exec(page)![1]!.replace(/&amp;/g, "&");
    const redirect = new URL(href).searchParams.get("redirect_uri") as string;
    const back = await signInAtIdp(href, "alice", redirect);
    await (await fetch(back)).text();
    const result = await run;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Logged in to");
    // The page goes with the sign-in.
    expect(() => statSync(file)).toThrow(/ENOENT/);
  });

  /** A server that answers discovery with `authorize` and every RPC with escape sequences. */
  async function hostileServer(authorize: (origin: string) => string) {
    const evil = "\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202Egnp.exe";
    const server = createServer((req, res) => {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (req.url === "/.well-known/openid-configuration") {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            issuer: origin,
            authorization_endpoint: authorize(origin),
            token_endpoint: `${origin}/oauth/token`,
            gatehouse_login_provider: { name: "login" },
          }),
        );
        return;
      }
      if (req.url?.endsWith("/GetCaller")) {
        const caller = create(CallerSchema, {
          identity: { uid: "x", name: `Mallory${evil}`, email: "" },
        });
        res
          .writeHead(200, { "content-type": "application/proto" })
          .end(Buffer.from(toBinary(CallerSchema, caller)));
        return;
      }
      res
        .writeHead(403, { "content-type": "application/json" })
        .end(JSON.stringify({ code: "permission_denied", message: `denied${evil}` }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, close: () => new Promise((r) => server.close(r)) };
  }

  it("a sign-in URL that is not http(s) is refused, and nothing is opened", async () => {
    for (const endpoint of ["file:///etc/passwd", "javascript:alert(1)", "ms-officecmd:x"]) {
      const hostile = await hostileServer(() => endpoint);
      const browser = fakeBrowser();
      const run = await gatehouse(["auth", "login"], {
        ...browser.env,
        GATEHOUSE_API: hostile.url,
      });
      await hostile.close();
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("not http or https");
      expect(browser.opened()).toBeUndefined();
    }
  });

  it("a sign-in URL on another origin than the API's is printed, not opened", async () => {
    const hostile = await hostileServer(() => "http://127.0.0.2:1/authorize");
    const browser = fakeBrowser();
    // Once it has said so it waits for a sign-in that never comes: stop it then (not after a
    // fixed time, which a loaded machine can spend just starting it).
    const run = await runBin(
      ["auth", "login"],
      { ...env, ...browser.env, GATEHOUSE_API: hostile.url },
      { stopWhen: (stderr) => stderr.includes("not opened") },
    );
    await hostile.close();
    expect(run.stderr).toContain("not opened");
    expect(browser.opened()).toBeUndefined();
  });

  it("what a server says is printed without control characters or bidi overrides", async () => {
    const hostile = await hostileServer((o) => `${o}/authorize`);
    const status = await gatehouse(["auth", "status"], {
      GATEHOUSE_API: hostile.url,
      GATEHOUSE_TOKEN: "t",
    });
    const list = await gatehouse(["iam", "groups", "list"], {
      GATEHOUSE_API: hostile.url,
      GATEHOUSE_TOKEN: "t",
    });
    await hostile.close();
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain("Mallory");
    expect(list.stderr).toContain("denied");
    for (const text of [status.stdout, status.stderr, list.stdout, list.stderr]) {
      expect(text).not.toMatch(/(?![\t\n])[\p{Cc}\u202a-\u202e]/u);
    }
  });
});
