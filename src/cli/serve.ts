import { loadConfig } from "../config.js";
import { createServer } from "../server.js";
import { createSqliteStore } from "../store/sqlite/sqlite-store.js";
import { checkDatabaseFile } from "./database-file.js";

/**
 * Serve the API until SIGTERM or SIGINT, then stop accepting, finish in-flight calls and
 * close the database. Resolves to the exit code.
 */
export async function serve(argv: string[]): Promise<number> {
  const config = loadConfig(argv);
  let warn: ((err: Error) => void) | undefined;
  const store = createSqliteStore(config.dbPath, {
    backgroundCheckpoints: { onError: (err) => warn?.(err) },
  });
  try {
    checkDatabaseFile(config.dbPath, config.allowReadableDb);
  } catch (err) {
    await store.close();
    throw err;
  }
  const server = await createServer({ config, store });
  warn = (err) =>
    server.app.log.warn({ err }, "the WAL checkpoint thread failed; commits checkpoint meanwhile");
  const address = await server.listen();
  server.app.log.info(
    { address: `${address.address}:${address.port}`, baseUrl: config.baseUrl, db: config.dbPath },
    "gatehouse listening",
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      server.app.log.info({ signal }, "shutting down");
      resolve();
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
  await server.close();
  await store.close();
  server.app.log.info("stopped");
  return 0;
}
