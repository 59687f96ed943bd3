/**
 * Gatehouse as the token service of a real registry: Debian's docker-registry (distribution
 * 2.8) started on 127.0.0.1 with token auth against the test Gatehouse, images written as an
 * OCI layout by the test and copied with skopeo. CI installs both with apt-get (.ci/run).
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { normalizeApi } from "../../src/cli/auth/auth-commands.js";
import { saveLogin } from "../../src/cli/auth/credentials.js";
import { childOutput } from "../helpers/child-output.js";
import { skopeo, startRegistry, type TestRegistry } from "../helpers/docker-registry.js";
import {
  apiError,
  connectGroups,
  connectTransports,
  grpcJsGroups,
  restGroups,
} from "../helpers/groups-clients.js";
import { type OciImage, writeOciImage } from "../helpers/oci-layout.js";
import { restCall } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import {
  freePort,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

let dir: string;
let gh: TestServer;
let registry: TestRegistry;
let org: TestOrg;
let image: OciImage;
const secret = "notification-secret-0123456789";
const cliEnv = () => ({ GATEHOUSE_DB: join(dir, "gatehouse.db"), GATEHOUSE_LOG_LEVEL: "silent" });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gatehouse-registry-test-"));
  const port = await freePort();
  gh = await startTestServer({
    GATEHOUSE_DB: join(dir, "gatehouse.db"),
    GATEHOUSE_REGISTRY_AUDIENCE: `127.0.0.1:${port}`,
    GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET: secret,
  });
  const bundle = await runCli(["registry", "trust-bundle"], cliEnv());
  expect(bundle.stderr).toBe("");
  expect(bundle.code).toBe(0);
  registry = await startRegistry({
    port,
    authUrl: gh.config.authUrl,
    bundle: bundle.stdout,
    notify: { baseUrl: gh.config.baseUrl, secret },
  });
  org = await gh.makeOrg("acme");
  image = await writeOciImage(join(dir, "image"), "v1", { "hello.txt": "hello, registry\n" });
}, 60_000);

afterAll(async () => {
  await registry?.stop();
  await gh?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const rest = (method: string, path: string, body?: unknown, as: TestCaller = org.owner) =>
  restCall(gh.url, method, path, body, as.headers);

async function makeRepo(name: string, parent = org.uid): Promise<string> {
  const made = await rest("POST", `/registry/v2beta1/repos/${parent}`, { name });
  expect(made.status).toBe(200);
  return made.json.uid as string;
}

const creds = (c: TestCaller) => `gatehouse:${c.token}`;

/** Push the test image as `caller` (undefined: anonymous) to `<name>:<tag>`. */
const push = (name: string, tag: string, caller?: TestCaller) =>
  skopeo(
    [
      "copy",
      "--dest-tls-verify=false",
      ...(caller ? ["--dest-creds", creds(caller)] : ["--dest-no-creds"]),
      image.ref,
      `docker://${registry.host}/${name}:${tag}`,
    ],
    dir,
  );

/** Pull `<name>:<tag>`'s manifest as `caller` (undefined: anonymous). */
const pull = (name: string, tag: string, caller?: TestCaller) =>
  skopeo(
    [
      "inspect",
      "--raw",
      "--tls-verify=false",
      ...(caller ? ["--creds", creds(caller)] : ["--no-creds"]),
      `docker://${registry.host}/${name}:${tag}`,
    ],
    dir,
  );

describe("a real registry with Gatehouse as its token service", () => {
  it("lets the owner push and an identity with registry.pull pull but not push", async () => {
    await makeRepo("app");
    const pushed = await push("acme/app", "v1", org.owner);
    expect(pushed.stderr + registry.logs().slice(-2000)).not.toMatch(/FATA|unauthorized/);
    expect(pushed.code).toBe(0);
    const puller = await gh.makeIdentity(org.uid, ["registry.pull"]);
    const pulled = await pull("acme/app", "v1", puller);
    expect(pulled.code).toBe(0);
    expect(JSON.parse(pulled.stdout).layers).toHaveLength(1);
    const refused = await push("acme/app", "v2", puller);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/denied|unauthorized|authentication required/i);
  }, 60_000);

  it("keeps another organization's identity out of a private repo", async () => {
    const other = await gh.makeOrg("globex");
    const stranger = await gh.makeIdentity(other.uid, ["registry.push"]);
    expect((await pull("acme/app", "v1", stranger)).code).not.toBe(0);
    expect((await push("acme/app", "v9", stranger)).code).not.toBe(0);
    expect((await pull("acme/app", "v1", org.owner)).code).toBe(0);
  }, 60_000);

  it("serves a public repo to anonymous pulls, and only pulls", async () => {
    const uid = await makeRepo("web");
    expect((await push("acme/web", "v1", org.owner)).code).toBe(0);
    const before = await pull("acme/web", "v1");
    expect(before.code).not.toBe(0);
    expect(before.stderr).toMatch(/unauthorized|authentication required|denied/i);
    const made = await rest("PATCH", `/registry/v2beta1/repos/${uid}`, { public: true });
    expect(made.json.public).toBe(true);
    const after = await pull("acme/web", "v1");
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout).layers).toHaveLength(1);
    expect((await push("acme/web", "v2")).code).not.toBe(0);
    // Back to private: the next anonymous pull is refused again.
    await rest("PATCH", `/registry/v2beta1/repos/${uid}`, { public: false });
    expect((await pull("acme/web", "v1")).code).not.toBe(0);
  }, 60_000);

  it("addresses a subgroup's repo by the group path, and a newer same-named org captures nothing", async () => {
    const team = await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "team" });
    expect(team.status).toBe(200);
    await makeRepo("api", team.json.uid);
    expect((await push("acme/team/api", "v1", org.owner)).code).toBe(0);
    // Another organization named acme, with its own repo "app": acme/app stays the first's.
    const copycat = await gh.makeOrg("acme");
    const made = await restCall(
      gh.url,
      "POST",
      `/registry/v2beta1/repos/${copycat.uid}`,
      { name: "app" },
      copycat.owner.headers,
    );
    expect(made.status).toBe(200);
    expect((await push("acme/app", "v1", copycat.owner)).code).not.toBe(0);
    expect((await pull("acme/app", "v1", copycat.owner)).code).not.toBe(0);
  }, 60_000);

  it("refuses an older organization's rename to a victim's name on every protocol: no capture", async () => {
    // The attacker's organization is the older one: oldest-first resolution handed it the
    // victim's namespace once renamed (issue 35, N1).
    const attacker = await gh.makeOrg("attacker");
    const victim = await gh.makeOrg("victim");
    const made = await restCall(
      gh.url,
      "POST",
      `/registry/v2beta1/repos/${victim.uid}`,
      { name: "app" },
      victim.owner.headers,
    );
    expect(made.status).toBe(200);
    expect((await push("victim/app", "v1", victim.owner)).code).toBe(0);
    const port = Number(new URL(gh.url).port);
    const transports = connectTransports(gh.url, attacker.owner.headers);
    const grpcJs = grpcJsGroups(port, attacker.owner.headers);
    try {
      for (const api of [
        restGroups(gh.url, attacker.owner.headers),
        connectGroups(transports.connect),
        connectGroups(transports.grpc),
        grpcJs,
      ]) {
        const err = await apiError(() =>
          api.update({ uid: attacker.uid, name: "victim" }, ["name"]),
        );
        expect(err).toMatchObject({ code: 6, reason: "ALREADY_EXISTS" });
        expect(err.message).toMatch(/registry namespace "victim" is held by another organization/);
      }
    } finally {
      grpcJs.close();
    }
    expect(
      (await rest("GET", `/iam/v2beta1/groups/${attacker.uid}`, undefined, attacker.owner)).json
        .name,
    ).toBe("attacker");
    // The attacker's token gets nothing of the victim's, and the victim keeps both.
    expect((await pull("victim/app", "v1", attacker.owner)).code).not.toBe(0);
    expect((await push("victim/app", "v1", attacker.owner)).code).not.toBe(0);
    expect((await pull("victim/app", "v1", victim.owner)).code).toBe(0);
    expect((await push("victim/app", "v2", victim.owner)).code).toBe(0);
  }, 90_000);

  it("makes Tags follow pushes, with the pushed digest", async () => {
    const uid = await makeRepo("tagged");
    expect((await push("acme/tagged", "v1", org.owner)).code).toBe(0);
    const inspected = await skopeo(
      [
        "inspect",
        "--tls-verify=false",
        "--creds",
        creds(org.owner),
        `docker://${registry.host}/acme/tagged:v1`,
      ],
      dir,
    );
    // The registry's digest of what skopeo pushed (skopeo rewrites the manifest's JSON).
    const digest = JSON.parse(inspected.stdout).Digest as string;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const tags = await eventually(async () => {
      const listed = await rest("GET", `/registry/v2beta1/tags?uidp.childrenOf=${uid}`);
      return listed.json.tags?.length ? listed.json.tags : undefined;
    });
    expect(tags).toMatchObject([{ name: "v1", digest }]);
  }, 60_000);

  it("refuses a notification without the secret, and it changes nothing", async () => {
    const uid = await makeRepo("guarded");
    const moved = `sha256:${"1".repeat(64)}`;
    const envelope = {
      events: [
        {
          id: "e1",
          timestamp: new Date().toISOString(),
          action: "push",
          target: { repository: "acme/guarded", tag: "latest", digest: moved },
        },
      ],
    };
    for (const authorization of [undefined, "Bearer wrong-secret-0123456789", `Basic ${secret}`]) {
      const res = await fetch(`${gh.url}/registry/notifications`, {
        method: "POST",
        headers: {
          "content-type": "application/vnd.docker.distribution.events.v1+json",
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify(envelope),
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe("unauthorized");
    }
    const listed = await rest("GET", `/registry/v2beta1/tags?uidp.childrenOf=${uid}`);
    expect(listed.json.tags ?? []).toEqual([]);
  });

  it("stops the next pull once the puller's role binding is deleted", async () => {
    const puller = await gh.makeIdentity(org.uid);
    const role = builtinRoles.find((r) => r.name === "registry.pull")!.uid;
    const bound = await rest("POST", `/iam/v2beta1/roleBindings/${org.uid}`, {
      identityUid: puller.uid,
      roleUid: role,
    });
    expect(bound.status).toBe(200);
    expect((await pull("acme/app", "v1", puller)).code).toBe(0);
    expect((await rest("DELETE", `/iam/v2beta1/roleBindings/${bound.json.uid}`)).status).toBe(200);
    const after = await pull("acme/app", "v1", puller);
    expect(after.code).not.toBe(0);
    expect(after.stderr).toMatch(/unauthorized|authentication required|denied/i);
  }, 60_000);

  it("hands skopeo a fresh token through docker-credential-gatehouse (--authfile credHelpers)", async () => {
    const home = join(dir, "helper-home");
    const env = { HOME: home, DOCKER_CONFIG: join(home, ".docker"), GATEHOUSE_API: gh.url };
    // As gatehouse auth login --identity would leave it: a workload that may push and pull.
    const puller = await gh.makeIdentity(org.uid, ["registry.push"]);
    saveLogin(env, normalizeApi(gh.url), {
      kind: "workload",
      identity: puller.uid,
      accessToken: puller.token,
      expiry: new Date(Date.now() + 3_600_000).toISOString(),
    });
    // skopeo runs the helper from PATH, as docker does (configure-docker checks it is there).
    const binDir = join(dir, "helper-bin");
    await mkdir(binDir, { recursive: true });
    const wrapper = join(binDir, "docker-credential-gatehouse");
    await writeFile(
      wrapper,
      `#!/bin/sh\nexec "${process.execPath}" --no-warnings --import "${registerBin}" "${helperBin}" "$@"\n`,
    );
    await chmod(wrapper, 0o755);
    const path = `${binDir}:${process.env.PATH ?? "/usr/bin:/bin"}`;
    const configured = await runCli(["auth", "configure-docker", "--registry", registry.host], {
      ...env,
      PATH: path,
    });
    expect(configured.stderr).toBe("");
    expect(configured.code).toBe(0);
    const dockerConfig = join(home, ".docker", "config.json");
    expect(JSON.parse(await readFile(dockerConfig, "utf8"))).toEqual({
      credHelpers: { [registry.host]: "gatehouse" },
    });

    // The helper protocol itself: a host on stdin, JSON credentials on stdout.
    const got = await helper(["get"], registry.host, env);
    expect(got.code).toBe(0);
    const answer = JSON.parse(got.stdout);
    expect(answer).toMatchObject({ ServerURL: registry.host, Username: "gatehouse" });
    // Never the API token (a registry hands it to the token realm it names, perhaps its own):
    // a 15-minute token for the registry's audience, which the API refuses (issue 35, N6).
    expect(answer.Secret).not.toBe(puller.token);
    const claims = decodeJwt(answer.Secret);
    expect(claims).toMatchObject({ sub: puller.uid, aud: registry.host });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(900);
    const asApi = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${answer.Secret}`,
    });
    expect(asApi.status).toBe(401);
    expect(asApi.json.details?.[0]?.reason).toBe("WRONG_AUDIENCE");
    const deleted = await restCall(gh.url, "DELETE", `/iam/v2beta1/groups/${org.uid}`, undefined, {
      authorization: `Bearer ${answer.Secret}`,
    });
    expect(deleted.status).toBe(401);
    const unknown = await helper(["get"], "elsewhere.example.com", env);
    expect(unknown).toMatchObject({
      code: 1,
      stdout: "credentials not found in native keychain\n",
    });

    const inspect = (authfile: string, as = home) =>
      skopeo(
        [
          "inspect",
          "--raw",
          "--tls-verify=false",
          "--authfile",
          authfile,
          `docker://${registry.host}/acme/app:v1`,
        ],
        as,
        { PATH: path },
      );
    const pulled = await inspect(dockerConfig);
    expect(pulled.stderr).toBe("");
    expect(pulled.code).toBe(0);
    const pushed = await skopeo(
      [
        "copy",
        "--dest-tls-verify=false",
        "--authfile",
        dockerConfig,
        image.ref,
        `docker://${registry.host}/acme/app:helper`,
      ],
      home,
      { PATH: path },
    );
    expect(pushed.stderr + registry.logs().slice(-2000)).not.toMatch(/FATA|unauthorized/);
    expect(pushed.code).toBe(0);
    // Without the helper's entry (and no docker config to fall back on), the same pull is
    // anonymous and refused.
    const bare = join(dir, "bare-home");
    await mkdir(bare, { recursive: true });
    const empty = join(bare, "empty.json");
    await writeFile(empty, "{}");
    expect((await inspect(empty, bare)).code).not.toBe(0);
  }, 60_000);

  // Last: it rotates the server's keys.
  it("keeps pulls working through a key rotation the bundle announced, and only then", async () => {
    const kidOf = async () => {
      const res = await fetch(
        `${gh.config.authUrl}/registry/token?service=${registry.host}&scope=repository:acme/app:pull`,
        { headers: { authorization: `Basic ${Buffer.from(creds(org.owner)).toString("base64")}` } },
      );
      return decodeProtectedHeader(((await res.json()) as { token: string }).token).kid;
    };
    const before = await kidOf();
    // The pending key the bundle carried starts signing (what gatehouse keys rotate does).
    await gh.server.keyRing.rotate();
    expect(await kidOf()).not.toBe(before);
    expect((await pull("acme/app", "v1", org.owner)).code).toBe(0);
    // A key the registry's bundle never had: the registry refuses its tokens.
    await gh.server.keyRing.rotate();
    const unknown = await pull("acme/app", "v1", org.owner);
    expect(unknown.code).not.toBe(0);
  }, 60_000);
});

const registerBin = fileURLToPath(new URL("../helpers/register-bin.mjs", import.meta.url));
const helperBin = fileURLToPath(
  new URL("../../bin/docker-credential-gatehouse.js", import.meta.url),
);

/** Run bin/docker-credential-gatehouse.js (on the sources) with `input` on stdin. */
function helper(argv: string[], input: string, env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    ["--no-warnings", "--import", registerBin, helperBin, ...argv],
    {
      env: { PATH: process.env.PATH ?? "", ...env },
    },
  );
  const output = childOutput(child);
  child.stdin.end(input);
  return output;
}

/** Poll `check` until it yields a value (the registry notifies asynchronously). */
async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}
