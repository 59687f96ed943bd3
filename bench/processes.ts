import { type ChildProcess, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { cpus } from "node:os";
import { freePort } from "../test/helpers/free-port.js";

/** Stop a child process with SIGTERM and wait for it to exit (at once if it has). */
export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGTERM");
  await exited;
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export { freePort };

/** CPU time (user + system) process `pid` has used, in ms (/proc/<pid>/stat); 0 once gone. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command may hold spaces and parentheses: fields after the last ')'. utime and
    // stime, fields 14 and 15 of the line, are 12 and 13 after it; clock ticks, 100 a second.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * Pin this process (the load generator) to core 1 when `taskset` works and there are two cores
 * or more, leaving core 0 to the servers it starts; whether `taskset` can pin processes here.
 */
export function pinToCore1(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
  } catch {
    return false;
  }
  if (cpus().length > 1) execFileSync("taskset", ["-pc", "1", String(process.pid)]);
  return true;
}
