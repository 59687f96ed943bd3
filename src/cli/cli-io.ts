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

// What a terminal would act on rather than show: C0 controls but tab and line feed (ESC starts
// escape sequences that clear the screen, retitle the window, or write to the clipboard;
// carriage return and backspace overwrite what was shown), DEL, C1 controls (CSI and OSC
// among them), and bidirectional overrides and isolates, which reorder what is shown.
const unsafeForTerminal = /(?![\t\n])[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu;

/** `text` without the characters a terminal would act on (see above). */
export function terminalSafe(text: string): string {
  return text.replace(unsafeForTerminal, "");
}

/**
 * The same io, printing only terminal-safe text: for the commands that print what a server
 * said (names, descriptions, error messages), which a hostile server could fill with escape
 * sequences (issue 23). JSON output is unaffected but for characters JSON may carry raw.
 */
export function terminalSafeIo(io: CliIo): CliIo {
  return {
    ...io,
    out: (text) => io.out(terminalSafe(text)),
    err: (text) => io.err(terminalSafe(text)),
  };
}
