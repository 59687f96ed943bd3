import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { decideUserCode } from "../helpers/device-sign-in.js";
import { late } from "../helpers/late.js";
import { type OidcIssuer, startOidcIssuer } from "../helpers/oidc-issuer.js";
import { runBin } from "../helpers/run-bin.js";
import type { CliRun } from "../helpers/run-cli.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// The setup of the `gatehouse auth` suites (auth-login*.test.ts), which run the package's
// executable (bin/gatehouse.js) as a child process against a server whose login provider is a
// test identity provider: two files, so that the run's two workers share them (one file, 16
// tests and about 45 child processes, was the suite's longest: 91 s at low load).

/** What useAuthCliSuite gives a file: the server, its providers, and the CLI's helpers. */
export interface AuthCliSuite {
  /** The server; its login provider is `idp`, with the people alice and dave. */
  gh: TestServer;
  idp: TestIdp;
  /** An OIDC issuer of workload tokens. */
  workloads: OidcIssuer;
  /** The CLI's environment: GATEHOUSE_API and an XDG_CONFIG_HOME of the file's own. */
  env: Record<string, string>;
  /** `gatehouse <argv>` as a child process, with `env` and `extraEnv`. */
  gatehouse(argv: string[], extraEnv?: Record<string, string>): Promise<CliRun>;
  /** Where the CLI stores its credentials. */
  credentialsFile(): string;
  /** The stored credentials for the server, as the test reads them. */
  // biome-ignore lint/suspicious/noExplicitAny: the JSON file as the test reads it
  stored(): any;
  /** Make the stored access token look expired to the CLI, as an hour later would. */
  expireStoredToken(): void;
  /** Refresh `refreshToken` at the server's token endpoint as the CLI's client. */
  refreshAtServer(refreshToken: string): Promise<{ error?: string; access_token?: string }>;
  /**
   * `gatehouse auth login --no-browser`, with the test as the browser: when the CLI prints the
   * URL, sign in at the identity provider as `account` and deliver the redirect to the CLI's
   * loopback listener, as a browser would (`deliver` may change it first).
   */
  loginAs(account: string, args?: string[], deliver?: (back: URL) => URL): Promise<CliRun>;
  /**
   * `gatehouse auth login --headless`, with the test as the person on another device: when the
   * CLI prints the user code, enter it at the verification page, sign in as `account` and press
   * `decision`.
   */
  loginHeadless(account: string, decision: "approve" | "deny"): Promise<CliRun>;
}

/** The `gatehouse auth` suites' setup for a file, started in a beforeAll, closed after all. */
export function useAuthCliSuite(): AuthCliSuite {
  let gh: TestServer | undefined;
  let idp: TestIdp | undefined;
  let workloads: OidcIssuer | undefined;
  // Filled in by the beforeAll; the object stays the same (tests spread it).
  const env: Record<string, string> = {};
  const when = "useAuthCliSuite(): its parts exist from the file's beforeAll to its afterAll";

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
    Object.assign(env, {
      GATEHOUSE_API: gh.url,
      XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "gatehouse-cli-")),
    });
  });

  afterAll(async () => {
    await gh?.close();
    await idp?.close();
    await workloads?.stop();
    if (env.XDG_CONFIG_HOME) rmSync(env.XDG_CONFIG_HOME, { recursive: true, force: true });
  });

  const suite: AuthCliSuite = {
    gh: late(() => gh, when),
    idp: late(() => idp, when),
    workloads: late(() => workloads, when),
    env,
    gatehouse: (argv, extraEnv = {}) => runBin(argv, { ...env, ...extraEnv }),
    credentialsFile: () => join(env.XDG_CONFIG_HOME as string, "gatehouse", "credentials.json"),
    stored: () => JSON.parse(readFileSync(suite.credentialsFile(), "utf8")).servers[suite.gh.url],
    expireStoredToken() {
      const file = JSON.parse(readFileSync(suite.credentialsFile(), "utf8"));
      file.servers[suite.gh.url].expiry = new Date(Date.now() - 1000).toISOString();
      writeFileSync(suite.credentialsFile(), JSON.stringify(file), { mode: 0o600 });
    },
    refreshAtServer: (refreshToken) =>
      fetch(`${suite.gh.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: refreshToken,
          client_id: "gatehouse-cli",
        }),
      }).then((r) => r.json() as Promise<{ error?: string; access_token?: string }>),
    async loginAs(account, args = [], deliver = (back) => back) {
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
    },
    async loginHeadless(account, decision) {
      let stderr = "";
      let person: Promise<unknown> | undefined;
      const run = runBin(["auth", "login", "--headless"], env, {
        timeoutMs: 30_000,
        onStderr: (t) => {
          stderr += t;
          const code = /enter the code\s+([A-Z]{4}-[A-Z]{4})\s/.exec(stderr)?.[1];
          if (code && !person) person = decideUserCode(suite.gh.url, code, account, decision);
        },
      });
      const result = await run;
      await person;
      return result;
    },
  };
  return suite;
}
