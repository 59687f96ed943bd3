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
