import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CallerSchema } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { personUid } from "../../src/auth/login/person.js";
import { newChildUid } from "../../src/uid.js";
import { runBin } from "../helpers/run-bin.js";
import { signInAtIdp } from "../helpers/test-idp.js";
import { useAuthCliSuite } from "./auth-cli-suite.js";

// `gatehouse auth`, the package's executable (bin/gatehouse.js) run as a child process (see
// auth-login.test.ts): the device code sign-in, the seed's workload login with a token file,
// and races and a hostile server.

const suite = useAuthCliSuite();
const { gh, idp, workloads, env, gatehouse, credentialsFile, stored } = suite;
const { loginAs, loginHeadless } = suite;

describe("gatehouse auth, a person without a browser", { timeout: 60_000 }, () => {
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
    const workloadLogin = () =>
      gatehouse(["auth", "login", "--identity", identity.uid, "--identity-token", file]);
    writeFileSync(file, await workloads.issue({ sub: "deployer", aud: gh.url }));
    const login = await workloadLogin();
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
    const refused = await workloadLogin();
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
