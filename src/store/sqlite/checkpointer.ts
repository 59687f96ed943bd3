import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Copies the WAL into the database file from a worker thread, on its own connection, so that
 * no request waits for it. Left to SQLite, a checkpoint runs inside the commit that crosses
 * the WAL size threshold (every ~60 CreateGroups on the benchmark's tree), on the event loop:
 * 20-150 ms for that one request, which was the whole p99 of CreateGroup.
 *
 * The server's connection keeps an automatic checkpoint at a far larger WAL as a safety net,
 * should this thread ever fall behind or die.
 */
export interface Checkpointer {
  /** Stop the thread and close its connection. */
  stop(): Promise<void>;
}

/** The WAL size (pages) at which the server's own connection still checkpoints. */
export const fallbackCheckpointPages = 10_000;

// The worker is plain JavaScript given as a string, so it runs the same from the TypeScript
// sources (tests) and from dist/; the driver comes by absolute path from the parent's resolve.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true, timeout: 0 });
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const timer = setInterval(() => {
  try {
    checkpoint.run();
  } catch {
    // Busy or locked: the next tick tries again; the fallback bounds the WAL meanwhile.
  }
}, workerData.intervalMs);
parentPort.once("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Start checkpointing the WAL of the database file at `path` every `intervalMs`. `onError`
 * hears of the thread's failure, which does not take the server down: the fallback remains.
 */
export function startCheckpointer(
  path: string,
  opts: { intervalMs?: number; onError?: ((err: Error) => void) | undefined } = {},
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { path, driver, intervalMs: opts.intervalMs ?? 200 },
  });
  worker.on("error", (err) => opts.onError?.(err));
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    async stop() {
      // Unreferenced, the thread would not keep the process alive until it has exited, and
      // a caller awaiting stop() at the top level would be cut off (exit code 13).
      worker.ref();
      worker.postMessage("stop");
      await exited;
    },
  };
}
