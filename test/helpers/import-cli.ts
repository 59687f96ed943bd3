import { importCommand } from "../../src/cli/import.js";

/** What one run of `gatehouse import` printed, and its exit code. */
export interface ImportRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `gatehouse import <args>` in-process against the database file `db`, capturing output. */
export async function runImport(db: string, args: string[]): Promise<ImportRun> {
  let stdout = "";
  let stderr = "";
  const code = await importCommand(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { GATEHOUSE_DB: db },
  });
  return { code, stdout, stderr };
}
