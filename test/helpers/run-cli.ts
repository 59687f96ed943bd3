import { main } from "../../src/cli/main.js";

/** What one run of the command line produced. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `gatehouse <argv>` through main(), the function bin/gatehouse.js calls, in this
 * process, with `env` as its whole environment (the developer's GATEHOUSE_* stay out).
 */
export async function runCli(argv: string[], env: Record<string, string> = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    out: (t) => {
      stdout += t;
    },
    err: (t) => {
      stderr += t;
    },
    env,
  });
  return { code, stdout, stderr };
}
