import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { runCli } from "../helpers/run-cli.js";

// A setting the server cannot start with is one line naming it, and exit 2: never a stack
// trace, and never accepted silently.

let dir: string;
let busy: net.Server;
let busyPort: number;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gatehouse-settings-"));
  busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
  busyPort = (busy.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((r) => busy.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const serve = (...flags: string[]) =>
  runCli(["serve", "--host", "127.0.0.1", "--db", join(dir, `db-${Math.random()}.db`), ...flags]);

it.each<[string, () => string[], RegExp]>([
  [
    "a busy port",
    () => ["--port", String(busyPort)],
    /GATEHOUSE_PORT \(--port\): port \d+ on 127\.0\.0\.1 is already in use/,
  ],
  [
    "a missing TLS certificate",
    () => ["--port", "0", "--tls-cert", join(dir, "none.pem"), "--tls-key", join(dir, "none.key")],
    /GATEHOUSE_TLS_CERT \(--tls-cert\): cannot read/,
  ],
  [
    "a file that is not a database",
    () => {
      const junk = join(dir, "junk.db");
      writeFileSync(junk, "not a database ".repeat(100), { mode: 0o600 });
      return ["--port", "0", "--db", junk];
    },
    /GATEHOUSE_DB \(--db\): cannot use .*junk\.db.* as the database: file is not a database/,
  ],
  [
    "a registry audience that is neither a host nor a URL",
    () => ["--port", "0", "--registry-audience", "registry example/com"],
    /GATEHOUSE_REGISTRY_AUDIENCE \(--registry-audience\): not a host/,
  ],
  [
    "a registry notifications secret too short to resist guessing",
    () => ["--port", "0", "--registry-notifications-secret", "short"],
    /GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET \(--registry-notifications-secret\): must be at least 16/,
  ],
  [
    "a CORS origin that is not an origin",
    () => ["--cors-origins", "foo"],
    /GATEHOUSE_CORS_ORIGINS \(--cors-origins\): "foo" is not an origin/,
  ],
  [
    "a CORS origin with a path",
    () => ["--cors-origins", "https://app.example.com/x"],
    /GATEHOUSE_CORS_ORIGINS/,
  ],
  [
    "a plain-http trusted issuer",
    () => ["--trusted-user-issuers", "http://login.example.com"],
    /GATEHOUSE_TRUSTED_USER_ISSUERS \(--trusted-user-issuers\): "http:\/\/login\.example\.com" must be an https URL/,
  ],
  [
    "a plain-http login provider",
    () => ["--login-issuer", "http://login.example.com", "--login-client-id", "x"],
    /GATEHOUSE_LOGIN_ISSUER \(--login-issuer\): "http:\/\/login\.example\.com" must be an https URL/,
  ],
  [
    "a login provider without a client ID",
    () => ["--login-issuer", "https://login.example.com"],
    /GATEHOUSE_LOGIN_CLIENT_ID \(--login-client-id\): is required with a login issuer/,
  ],
  [
    "a client secret without a login provider",
    () => ["--login-client-secret", "s3cret"],
    /GATEHOUSE_LOGIN_ISSUER \(--login-issuer\): is required when/,
  ],
  [
    "a refresh token lifetime that is not a duration",
    () => ["--refresh-token-ttl", "a week"],
    /GATEHOUSE_REFRESH_TOKEN_TTL \(--refresh-token-ttl\): "a week" is not a duration/,
  ],
  [
    "an event retention shorter than an hour",
    () => ["--event-retention", "30m"],
    /GATEHOUSE_EVENT_RETENTION \(--event-retention\): "30m" is not a duration between 1h and 3650d/,
  ],
  [
    "a lean-paths switch that is not a boolean",
    () => ["--lean-paths", "sometimes"],
    /GATEHOUSE_LEAN_PATHS \(--lean-paths\): not a boolean: "sometimes"/,
  ],
  [
    "a connection limit out of its range",
    () => ["--port", "0", "--max-connections", "0"],
    /GATEHOUSE_MAX_CONNECTIONS \(--max-connections\): "0" is not an integer between 1 and 1000000\n/,
  ],
  [
    "a log level not in the list",
    () => ["--port", "0", "--log-level", "loud"],
    /GATEHOUSE_LOG_LEVEL \(--log-level\): "loud" is not one of fatal, error, warn, info, debug, trace, silent\n/,
  ],
  [
    "the removed gRPC port flag",
    () => ["--port", "0", "--grpc-port", "0"],
    /GATEHOUSE_GRPC_PORT \(--grpc-port\): the separate gRPC port was removed: the main port \(GATEHOUSE_PORT, --port\) serves gRPC/,
  ],
])("refuses %s with one line and exit 2", async (_what, flags, message) => {
  const run = await serve(...flags());
  expect(run.code).toBe(2);
  expect(run.stdout).toBe("");
  expect(run.stderr).toMatch(message);
  expect(run.stderr.trim().split("\n")).toHaveLength(1);
});

// A deployment still naming the removed gRPC port learns at start-up, not when its gRPC clients
// cannot connect: even empty (once "off"), the variable is refused. `serve` reads the process's
// own environment, as it does in production.
it.each(["9090", ""])(
  "refuses GATEHOUSE_GRPC_PORT=%j, saying the main port serves gRPC",
  async (v) => {
    vi.stubEnv("GATEHOUSE_GRPC_PORT", v);
    try {
      const run = await serve("--port", "0");
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(
          /GATEHOUSE_GRPC_PORT \(--grpc-port\): the separate gRPC port was removed: the main port \(GATEHOUSE_PORT, --port\) serves gRPC, as it serves Connect, gRPC-Web and REST; point gRPC clients at it and unset this setting$/,
        ),
      ]);
    } finally {
      vi.unstubAllEnvs();
    }
  },
);

// Every command takes the server's settings, so every command names the removed one the same way.
it.each(["bootstrap", "token"])(
  "%s refuses --grpc-port, saying the main port serves gRPC",
  async (c) => {
    const run = await runCli([
      c,
      "--db",
      join(dir, `db-${Math.random()}.db`),
      "--grpc-port",
      "9090",
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /GATEHOUSE_GRPC_PORT \(--grpc-port\): the separate gRPC port was removed: the main port \(GATEHOUSE_PORT, --port\) serves gRPC/,
    );
  },
);
