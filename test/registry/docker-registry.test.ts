/**
 * Gatehouse as the token service of a real registry: Debian's docker-registry (distribution
 * 2.8) started on 127.0.0.1 with token auth against the test Gatehouse, images written as an
 * OCI layout by the test and copied with skopeo. CI installs both with apt-get (.ci/run).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skopeo, startRegistry, type TestRegistry } from "../helpers/docker-registry.js";
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
});
