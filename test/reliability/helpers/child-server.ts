import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const register = fileURLToPath(new URL("../child/register-ts.mjs", import.meta.url));
const entry = fileURLToPath(new URL("../child/serve.ts", import.meta.url));

/** A `gatehouse serve` in its own process. */
export interface ChildServer {
  readonly process: ChildProcess;
  /** Resolves with the exit signal (or code) once the process is gone. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  /** Stderr so far, for failure messages. */
  stderr(): string;
}

/**
 * Start `gatehouse serve` from the TypeScript sources in a child process (see
 * child/ts-hooks.mjs for why not from dist/), configured by `env` (GATEHOUSE_*), and wait until
 * `${url}/readyz` answers 200. Kills the child and throws if it is not ready in `timeoutMs`.
 */
export async function startChildServer(
  url: string,
  env: Record<string, string>,
  timeoutMs = 15_000,
): Promise<ChildServer> {
  const child = spawn(process.execPath, ["--no-warnings", "--import", register, entry], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (t: string) => {
    stderr += t;
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(signal ?? code)),
  );
  const server: ChildServer = { process: child, exited, stderr: () => stderr };
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (Date.now() < deadline && !gone) {
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return server;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  await exited;
  throw new Error(`the child server did not become ready: ${stderr}`);
}
