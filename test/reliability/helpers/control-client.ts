import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "../../helpers/test-server.js";
import { type ChildServer, startChildServer } from "./child-server.js";

/** A file's served process: its port and the child, once `beforeAll` has started it. */
export interface ServedProcess {
  readonly port: number;
  readonly child: ChildServer;
}

/**
 * A Gatehouse process of the file's own (SQLite in a temporary folder named after `name`, on
 * 127.0.0.1, warnings only), started before the file's tests with `env` added and killed
 * after them. The hostile-client tests attack it from one loopback address and measure a
 * control client from another.
 */
export function useServedProcess(name: string, env: Record<string, string> = {}): ServedProcess {
  const dir = mkdtempSync(join(tmpdir(), `gatehouse-${name}-`));
  let port = 0;
  let child: ChildServer | undefined;
  beforeAll(async () => {
    port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    child = await startChildServer(
      url,
      {
        GATEHOUSE_DB: join(dir, "gatehouse.db"),
        GATEHOUSE_HOST: "127.0.0.1",
        GATEHOUSE_PORT: String(port),
        GATEHOUSE_BASE_URL: url,
        GATEHOUSE_LOG_LEVEL: "warn",
        ...env,
      },
      60_000,
    );
  });
  afterAll(async () => {
    child?.process.kill("SIGKILL");
    await child?.exited;
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get port() {
      return port;
    },
    get child() {
      if (!child) throw new Error("the served process starts in beforeAll");
      return child;
    },
  };
}

/** The q-quantile of `xs` (NaN for none). */
export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

/**
 * A control client of `served`, and the server's CPU while it waits. What the server's main
 * thread ran while a control call waited is what was served before it, whatever share of the
 * core the machine's load left it (on a loaded machine a busy process waits for the core, so
 * wall time would measure the machine more than the order of service).
 */
export function controlClientOf(served: ServedProcess) {
  /** One GET on `agent`'s kept-alive connection: its time in ms (NaN if not 200). */
  function controlCall(agent: http.Agent, path: string): Promise<number> {
    return new Promise((resolve) => {
      const t0 = performance.now();
      const req = http.get({ host: "127.0.0.1", port: served.port, path, agent }, (res) => {
        res.resume();
        res.once("end", () =>
          resolve(res.statusCode === 200 ? performance.now() - t0 : Number.NaN),
        );
      });
      req.once("error", () => resolve(Number.NaN));
    });
  }

  /** The server's main thread (its event loop): ms it has run on a core (/proc schedstat). */
  function serverCpuMs(): number {
    const [run] = readFileSync(`/proc/${served.child.process.pid}/schedstat`, "utf8").split(" ");
    return Number(run) / 1e6;
  }

  /** Control calls of /docs/docs.js one at a time, 20 ms apart, for `ms`: times and CPU. */
  async function controlCalls(agent: http.Agent, ms: number) {
    const wall: number[] = [];
    const cpu: number[] = [];
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const c0 = serverCpuMs();
      wall.push(await controlCall(agent, "/docs/docs.js"));
      cpu.push(serverCpuMs() - c0);
      await new Promise((r) => setTimeout(r, 20));
    }
    return { wall, cpu };
  }

  return { controlCall, controlCalls, serverCpuMs };
}
