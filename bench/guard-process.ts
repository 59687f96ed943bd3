/**
 * A built checkout's guard server (its dist/bench/guard-server.js) started as a process of its
 * own, the way bench:guard and the profiling tools start it: with the Node flags and
 * environment that checkout ships with (its dist/src/node-flags.js, none where it has none),
 * pinned to core 0 where taskset is present (pinToCore1 leaves that core to the servers).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** What a guard server prints once it listens (bench/guard-server.ts). */
export interface GuardServed {
  port: number;
  baseUrl: string;
  org: string;
  leaf: string;
  parent: string;
  identity: string;
  token: string;
}

/** What startGuardServer asks for. */
export interface GuardStart {
  /** The built checkout whose server runs. */
  checkout: string;
  /** The server's SQLite file. */
  db: string;
  /** The OIDC issuer whose "workload" token the dataset's identity matches. */
  issuerUrl: string;
  /** Pin the server to core 0 with taskset (where pinToCore1 said taskset works). */
  pin: boolean;
  /** Node flags after the shipped ones (--cpu-prof...). */
  flags?: string[];
  /** Its name in errors. */
  name?: string;
}

/**
 * Start `checkout`'s guard server and wait for its line; rejects if it exits first or says
 * nothing for 60 s (the seed takes seconds on a loaded machine). Stop it with processes.ts's
 * `stop`.
 */
export async function startGuardServer(
  start: GuardStart,
): Promise<{ proc: ChildProcess; served: GuardServed }> {
  const name = start.name ?? start.checkout;
  const flagsFile = join(start.checkout, "dist/src/node-flags.js");
  const shipped = existsSync(flagsFile) ? await import(pathToFileURL(flagsFile).href) : {};
  const flags = [
    ...((shipped.serverNodeFlags as string[] | undefined) ?? []),
    ...(start.flags ?? []),
  ];
  // Pinned to one core, what `gatehouse serve` restarts itself with there, by its own rule.
  const oneCpu = shipped.oneCpuRestartFlags as
    | ((cpus: number, execArgv: readonly string[]) => string[])
    | undefined;
  const cmd = [
    process.execPath,
    ...(start.pin ? (oneCpu?.(1, flags) ?? []) : []),
    ...flags,
    join(start.checkout, "dist/bench/guard-server.js"),
    start.db,
    start.issuerUrl,
  ];
  const env = { ...process.env, ...(shipped.serverEnvironment ?? {}) };
  const proc = start.pin
    ? spawn("taskset", ["-c", "0", ...cmd], { stdio: ["ignore", "pipe", "inherit"], env })
    : spawn(cmd[0]!, cmd.slice(1), { stdio: ["ignore", "pipe", "inherit"], env });
  const served = await new Promise<GuardServed>((resolveServed, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`${name}: no answer in 60 s`)), 60_000);
    proc.stdout!.on("data", (chunk: Buffer) => {
      out += chunk;
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        resolveServed(JSON.parse(out.slice(0, nl)) as GuardServed);
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name}: exited with ${code}`));
    });
  });
  return { proc, served };
}
