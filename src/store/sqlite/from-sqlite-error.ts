import { StoreError } from "../store.js";

/**
 * Turn a driver error that a caller can cause into a StoreError; return anything else (a bug,
 * a broken disk) unchanged so that it surfaces as an internal error with its cause.
 *
 * Operations check their own preconditions first and throw StoreErrors with precise messages;
 * this is the backstop that keeps a constraint or lock error from ever escaping raw.
 */
export function fromSqliteError(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const code = sqliteCode(err);
  if (code === undefined) return err;
  const mapped = mapCode(code);
  // The driver error stays attached as the cause, for the log.
  return mapped ? Object.assign(mapped, { cause: err }) : err;
}

function mapCode(code: string): StoreError | undefined {
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    return new StoreError("already_exists", "a record with the same key already exists");
  }
  if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") {
    return new StoreError(
      "failed_precondition",
      "a referenced record is missing or still referenced",
    );
  }
  // The disk (or max_page_count) is full: the transaction was rolled back, nothing is lost,
  // and the same write succeeds once there is room.
  if (code === "SQLITE_FULL") {
    return new StoreError("storage_full", "the database's storage is full");
  }
  // Another connection held the lock past busy_timeout: the caller may retry.
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return new StoreError("unavailable", "the database is busy");
  }
  return undefined;
}

function sqliteCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null || !("code" in err)) return undefined;
  const { code } = err as { code: unknown };
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}
