import type { ChildProcess } from "node:child_process";

/** What a child process wrote and how it ended. */
export interface ChildOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Everything a child spawned with piped stdout and stderr writes, and its exit code, once it
 * has closed (a stream it did not pipe reads as "").
 */
export function childOutput(child: ChildProcess): Promise<ChildOutput> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (t: string) => {
    stdout += t;
  });
  child.stderr?.setEncoding("utf8").on("data", (t: string) => {
    stderr += t;
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}
