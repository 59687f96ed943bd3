import { spawn } from "node:child_process";

/**
 * Run an attacking client in a Node process of its own (`node -e script ...args`), so that
 * its CPU is not the served process's or the control client's, and resolve with the numbers it
 * prints on stdout, space-separated, once it has stopped by itself; reject if it exits
 * otherwise than 0.
 */
export async function runAttacker(script: string, args: (string | number)[]): Promise<number[]> {
  const out = await startAttacker(script, args).exited;
  return out.trim().split(" ").map(Number);
}

/** An attacking process started by startAttacker. */
export interface Attacker {
  /** Resolves once what it printed on stdout matches `what`; rejects if it exits before. */
  printed(what: RegExp): Promise<string>;
  /** Resolves with all it printed once it exits 0; rejects if it exits otherwise. */
  exited: Promise<string>;
  kill(): void;
}

/**
 * Start an attacking client in a Node process of its own, as runAttacker does, for a test
 * that acts on what it prints while it runs.
 */
export function startAttacker(script: string, args: (string | number)[]): Attacker {
  const p = spawn(process.execPath, ["-e", script, ...args.map(String)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let exitCode: number | null | undefined;
  const waiting = new Set<() => void>();
  const wake = () => {
    for (const check of waiting) check();
  };
  p.stdout.setEncoding("utf8").on("data", (t: string) => {
    out += t;
    wake();
  });
  const exited = new Promise<string>((resolve, reject) => {
    // After stdout's end: what it printed last is in `out`.
    p.once("close", (code) => {
      exitCode = code;
      wake();
      if (code === 0) resolve(out);
      else reject(new Error(`the attacking process exited ${code}`));
    });
  });
  // A test that only waits for what it prints need not see the exit's rejection.
  exited.catch(() => undefined);
  return {
    printed: (what) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (what.test(out)) resolve(out);
          else if (exitCode !== undefined) {
            reject(new Error(`the attacking process exited, having printed ${out}`));
          } else return;
          waiting.delete(check);
        };
        waiting.add(check);
        check();
      }),
    exited,
    kill: () => p.kill(),
  };
}
