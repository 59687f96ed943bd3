import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Debian's distribution 2.8 (package docker-registry), which CI installs with apt-get. */
export const registryBinary = "/usr/bin/docker-registry";
/** Debian's skopeo, installed beside it. */
export const skopeoBinary = "/usr/bin/skopeo";

/** A docker-registry running on 127.0.0.1 with Gatehouse as its token service. */
export interface TestRegistry {
  /** `127.0.0.1:<port>`: its address and its service name. */
  host: string;
  /** What it has logged so far (stderr), for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

/** How the registry trusts and tells Gatehouse. */
export interface RegistryOptions {
  /** A free port (the service name Gatehouse is configured with names it). */
  port: number;
  /** Gatehouse's auth URL: `issuer`, and the realm's base. */
  authUrl: string;
  /** The PEM of `gatehouse registry trust-bundle`. */
  bundle: string;
  /** Gatehouse's base URL and notification secret, to send events to Gatehouse. */
  notify?: { baseUrl: string; secret: string };
}

/**
 * Start docker-registry on a loopback port with a temporary config.yml: filesystem storage
 * in a temporary directory, token auth against Gatehouse, notifications to it. Resolves once
 * `/v2/` answers (401: it wants a token).
 */
export async function startRegistry(opts: RegistryOptions): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), "gatehouse-registry-"));
  const host = `127.0.0.1:${opts.port}`;
  await writeFile(join(dir, "bundle.pem"), opts.bundle);
  const notifications = opts.notify
    ? `notifications:
  endpoints:
    - name: gatehouse
      url: ${opts.notify.baseUrl}/registry/notifications
      headers:
        Authorization: [Bearer ${opts.notify.secret}]
      timeout: 2s
      threshold: 3
      backoff: 200ms
`
    : "";
  await writeFile(
    join(dir, "config.yml"),
    `version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${join(dir, "data")}
  delete:
    enabled: true
http:
  addr: ${host}
  secret: ${randomBytes(16).toString("hex")}
auth:
  token:
    realm: ${opts.authUrl}/registry/token
    service: ${host}
    issuer: ${opts.authUrl}
    rootcertbundle: ${join(dir, "bundle.pem")}
${notifications}`,
  );
  let logs = "";
  const child: ChildProcess = spawn(registryBinary, ["serve", join(dir, "config.yml")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d) => {
    logs += d;
  });
  child.stderr?.on("data", (d) => {
    logs += d;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`docker-registry exited: ${logs}`);
    }
    try {
      const res = await fetch(`http://${host}/v2/`);
      if (res.status === 401) break;
    } catch {
      // not listening yet
    }
    if (i > 200) {
      await stop();
      throw new Error(`docker-registry did not start: ${logs}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { host, logs: () => logs, stop };
}

/** What one skopeo run produced. */
export interface SkopeoRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run skopeo with `args` (no signature policy; a HOME of its own, so no developer's
 * credentials take part). Never throws for a failed run: the caller asserts on it.
 */
export function skopeo(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): Promise<SkopeoRun> {
  return new Promise((resolve) => {
    execFile(
      skopeoBinary,
      ["--insecure-policy", ...args],
      {
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: home,
          XDG_RUNTIME_DIR: home,
          ...env,
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}
