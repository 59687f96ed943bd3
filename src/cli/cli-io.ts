/** Where a command reads its settings and writes: the process's, or a test's. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** The environment the GATEHOUSE_* settings come from. */
  env: NodeJS.ProcessEnv;
  /** Whether stdout is a terminal: remote commands print tables there, JSON elsewhere. */
  stdoutIsTty?: boolean;
}

/** The process's stdout, stderr and environment. */
export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  stdoutIsTty: process.stdout.isTTY === true,
};

/**
 * CliError is a refusal with a message for the operator and an exit code: 2 for a bad
 * invocation or a database that cannot be used, 1 for a request that failed, 3 for "not
 * logged in".
 */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode: 1 | 2 | 3 = 2,
  ) {
    super(message);
  }
}
