import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { CliRun } from "./run-cli.js";

const register = fileURLToPath(new URL("register-bin.mjs", import.meta.url));
/** The package's executable, bin/gatehouse.js. */
export const bin = fileURLToPath(new URL("../../bin/gatehouse.js", import.meta.url));

/** Options of runBin. */
export interface RunBinOptions {
  /** Called with each chunk the process writes to stderr, as it writes it. */
  onStderr?: (text: string) => void;
  /** Kill the process if it has not exited by then. */
  timeoutMs?: number;
  /**
   * End the process (SIGTERM) once its stderr so far satisfies this: for a command that
   * waits on after it said what the test asserts.
   */
  stopWhen?: (stderr: string) => boolean;
  /** The same for stdout (the server's log). */
  stopWhenOut?: (stdout: string) => boolean;
  /** Called with the process once spawned (to signal it). */
  onStart?: (child: ChildProcess) => void;
  /** Run it on one CPU (`taskset -c 0`, which execs it: the same pid). */
  oneCpu?: boolean;
}

/**
 * Run the package's executable, `bin/gatehouse.js <argv>`, in a process of its own (on the
 * TypeScript sources: see bin-hooks.mjs), with `env` as its whole environment besides PATH,
 * so the developer's GATEHOUSE_* and XDG_* stay out. Resolves with its exit code and output.
 */
export function runBin(
  argv: string[],
  env: Record<string, string>,
  opts: RunBinOptions = {},
): Promise<CliRun> {
  const cmd = [process.execPath, "--no-warnings", "--import", register, bin, ...argv];
  if (opts.oneCpu) cmd.unshift("taskset", "-c", "0");
  const child = spawn(cmd[0]!, cmd.slice(1), {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  opts.onStart?.(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => {
    stdout += t;
    if (opts.stopWhenOut?.(stdout)) child.kill("SIGTERM");
  });
  child.stderr.setEncoding("utf8").on("data", (t: string) => {
    stderr += t;
    opts.onStderr?.(t);
    if (opts.stopWhen?.(stderr)) child.kill("SIGTERM");
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
}
