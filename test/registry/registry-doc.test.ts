/**
 * docs/registry.md's push from a checkout, run as written: the shell block of Setup step 4 is
 * read from the doc and each line run by bash, with only the example hosts replaced by this
 * test's Gatehouse and registry (Debian's docker-registry and skopeo, as in
 * docker-registry.test.ts). `npm link` links into a prefix of the test's own; the commands it
 * puts on PATH run the TypeScript sources (NODE_OPTIONS imports the bin hooks); the person's
 * browser is the test, signing in at a test identity provider.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRegistry, type TestRegistry } from "../helpers/docker-registry.js";
import { writeOciImage } from "../helpers/oci-layout.js";
import { runCli } from "../helpers/run-cli.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const registerBin = fileURLToPath(new URL("../helpers/register-bin.mjs", import.meta.url));

let dir: string;
let gh: TestServer;
let idp: TestIdp;
let registry: TestRegistry;

/** The lines of the shell block docs/registry.md marks as run by this test. */
function docBlock(markdown: string): string[] {
  const marker = markdown.indexOf("test/registry/registry-doc.test.ts runs this block");
  if (marker < 0) throw new Error("docs/registry.md lost the block this test runs");
  const start = markdown.indexOf("```sh\n", marker) + "```sh\n".length;
  const end = markdown.indexOf("```", start);
  return markdown
    .slice(start, end)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gatehouse-registry-doc-"));
  const port = await freePort();
  const registryPort = await freePort();
  idp = await startTestIdp({
    redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
    people: { alice: { name: "Alice", email: "alice@example.com", email_verified: true } },
  });
  gh = await startTestServer(
    {
      GATEHOUSE_DB: join(dir, "gatehouse.db"),
      GATEHOUSE_REGISTRY_AUDIENCE: `127.0.0.1:${registryPort}`,
      GATEHOUSE_LOGIN_ISSUER: idp.issuer,
      GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
      GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
      GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
    },
    { port },
  );
  const bundle = await runCli(["registry", "trust-bundle"], {
    GATEHOUSE_DB: join(dir, "gatehouse.db"),
    GATEHOUSE_LOG_LEVEL: "silent",
  });
  expect(bundle.code).toBe(0);
  registry = await startRegistry({
    port: registryPort,
    authUrl: gh.config.authUrl,
    bundle: bundle.stdout,
  });
}, 60_000);

afterAll(async () => {
  await registry?.stop();
  await gh?.close();
  await idp?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Run one line of the doc with bash in `cwd`; when it prints a sign-in URL, be the person's
 * browser: sign in as alice and bring the answer back to the command.
 */
function sh(line: string, cwd: string, env: Record<string, string>) {
  const child = spawn("bash", ["-c", line], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let browser: Promise<void> | undefined;
  child.stdout.setEncoding("utf8").on("data", (t: string) => {
    stdout += t;
  });
  child.stderr.setEncoding("utf8").on("data", (t: string) => {
    stderr += t;
    const printed = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\s/.exec(stderr)?.[1];
    if (printed && !browser) {
      const redirect = new URL(printed).searchParams.get("redirect_uri") as string;
      browser = (async () => {
        const back = await signInAtIdp(printed, "alice", redirect);
        await (await fetch(back)).text();
      })();
    }
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", async (code) => {
      clearTimeout(timer);
      await browser;
      resolve({ code, stdout, stderr });
    }),
  );
}

it("pushes and pulls through docs/registry.md's commands, as written", async () => {
  const lines = docBlock(await readFile(join(root, "docs", "registry.md"), "utf8"));
  expect(lines[0]).toMatch(/^npm link\b/);
  const home = join(dir, "home");
  const work = join(dir, "work");
  const prefix = join(dir, "npm-prefix");
  await mkdir(join(home, ".config", "containers"), { recursive: true });
  await mkdir(work, { recursive: true });
  // The person's own containers settings, where skopeo reads them: any image accepted, and
  // this registry spoken to over plain HTTP (a real one has TLS).
  await writeFile(
    join(home, ".config", "containers", "policy.json"),
    JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] }),
  );
  await writeFile(
    join(home, ".config", "containers", "registries.conf"),
    `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`,
  );
  await writeOciImage(join(work, "app"), "v1", { "hello.txt": "hello from the docs\n" });
  // The project's Node first, as npm scripts have it; nothing of the developer's beyond it.
  const env: Record<string, string> = {
    PATH: `${join(prefix, "bin")}:${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: home,
    XDG_RUNTIME_DIR: join(home, "run"),
    npm_config_prefix: prefix,
    npm_config_update_notifier: "false",
    BROWSER: "true",
  };
  const hosts = (l: string) =>
    l
      .replaceAll("https://gatehouse.example.com", gh.url)
      .replaceAll("registry.example.com", registry.host);

  // Without the helper on PATH, configure-docker refuses and names the fix.
  const configure = lines.find((l) => l.startsWith("gatehouse auth configure-docker"));
  const refused = await runCli(
    ["auth", "configure-docker", "--registry", registry.host, "--api", gh.url],
    { HOME: home, PATH: "/usr/bin:/bin" },
  );
  expect(configure).toBeDefined();
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("docker-credential-gatehouse is not on PATH");
  expect(refused.stderr).toContain(`run \`npm link\` in ${root.replace(/\/$/, "")}`);

  const outputs: string[] = [];
  for (const line of lines) {
    // Each line runs in a shell of its own: what an `export` sets is carried to the next.
    const exported = /^export ([A-Z_]+)=/.exec(line)?.[1];
    if (exported) {
      const value = await sh(`${hosts(line)}; printf %s "$${exported}"`, work, env);
      Object.assign(env, { [exported]: value.stdout });
      continue;
    }
    const npm = line.startsWith("npm ");
    const run = await sh(
      hosts(line),
      npm ? root : work,
      npm ? env : { ...env, NODE_OPTIONS: `--no-warnings --import=${registerBin}` },
    );
    outputs.push(run.stdout);
    expect({ line, ...run, registry: run.code ? registry.logs().slice(-1500) : "" }).toMatchObject({
      line,
      code: 0,
    });
  }
  // The last line, skopeo inspect, read back the image the doc's push wrote.
  expect(JSON.parse(outputs.at(-1) as string).Name).toBe(`${registry.host}/acme/app`);
  expect(JSON.parse(await readFile(join(home, ".docker", "config.json"), "utf8"))).toEqual({
    credHelpers: { [registry.host]: "gatehouse" },
  });
}, 240_000);
