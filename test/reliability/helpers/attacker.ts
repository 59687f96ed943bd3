import { spawn } from "node:child_process";

/**
 * Run an attacking client in a Node process of its own (`node -e script ...args`), so that
 * its CPU is not the served process's or the control client's, and resolve with the numbers it
 * prints on stdout, space-separated, once it has stopped by itself; reject if it exits
 * otherwise than 0.
 */
export function runAttacker(script: string, args: (string | number)[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["-e", script, ...args.map(String)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    p.stdout.setEncoding("utf8").on("data", (t: string) => {
      out += t;
    });
    p.once("exit", (code) => {
      if (code === 0) resolve(out.trim().split(" ").map(Number));
      else reject(new Error(`the attacking process exited ${code}`));
    });
  });
}

/** An attacking process started by startAttacker. */
export interface Attacker {
  /** Resolves once what it printed on stdout matches `what`; rejects if it exits before. */
  printed(what: RegExp): Promise<string>;
  kill(): void;
}

/**
 * Start an attacking client in a Node process of its own (`node -e script ...args`), like
 * runAttacker, for a test that acts on what it prints while it runs.
 */
export function startAttacker(script: string, args: (string | number)[]): Attacker {
  const p = spawn(process.execPath, ["-e", script, ...args.map(String)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let exited = false;
  const waiting = new Set<() => void>();
  const wake = () => {
    for (const check of waiting) check();
  };
  p.stdout.setEncoding("utf8").on("data", (t: string) => {
    out += t;
    wake();
  });
  p.once("exit", () => {
    exited = true;
    wake();
  });
  return {
    printed: (what) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (what.test(out)) resolve(out);
          else if (exited) reject(new Error(`the attacking process exited, having printed ${out}`));
          else return;
          waiting.delete(check);
        };
        waiting.add(check);
        check();
      }),
    kill: () => p.kill(),
  };
}
