import type { Database } from "better-sqlite3";

/** One write waiting for the next commit. */
interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** What a batch did, for the store's readiness bookkeeping. */
export interface BatchOutcome {
  /** Writes acknowledged by this batch's commit. */
  committed: number;
  /** The errors of the writes it refused (already mapped). */
  errors: unknown[];
}

/**
 * GroupCommit runs the writes that arrive in one turn of the event loop as one transaction,
 * so that they share one commit, and one fsync, instead of paying one each.
 *
 * - Each write still sees every earlier write of the batch, and is answered only after the
 *   commit that made it durable: a caller never hears of a write a crash could lose.
 * - A write that fails changes nothing: its own transaction is a savepoint of the batch's
 *   (better-sqlite3 nests them so), a single statement is undone by SQLite, and the others
 *   of the batch go on. If SQLite rolls the whole transaction back (a full disk, an I/O
 *   error), the writes before it are refused with that error and the rest start a new one.
 * - A write alone in its turn runs as it always did, in its own transaction.
 */
export interface GroupCommit {
  /** Run `write` with the next batch; resolves after its commit. */
  enqueue<T>(write: () => T): Promise<T>;
}

/**
 * Create the group commit of `db`. `mapError` turns a driver error into what callers see;
 * `blocked` returns a promise while another transaction holds the connection (atomically),
 * and the batch waits for it; `done` hears each batch's outcome.
 */
export function createGroupCommit(
  db: Database,
  mapError: (err: unknown) => unknown,
  blocked: () => Promise<void> | undefined,
  done: (outcome: BatchOutcome) => void,
): GroupCommit {
  let queue: Pending[] = [];
  let scheduled = false;

  const flush = () => {
    const wait = blocked();
    if (wait) {
      void wait.then(flush);
      return;
    }
    scheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length === 1) runAlone(batch[0]!);
    else if (batch.length > 1) runTogether(batch);
  };

  const runAlone = (p: Pending) => {
    try {
      const value = p.run();
      done({ committed: 1, errors: [] });
      p.resolve(value);
    } catch (err) {
      const mapped = mapError(err);
      done({ committed: 0, errors: [mapped] });
      p.reject(mapped);
    }
  };

  const runTogether = (batch: Pending[]) => {
    let i = 0;
    while (i < batch.length) {
      const ok: { p: Pending; value: unknown }[] = [];
      const errors: unknown[] = [];
      try {
        db.exec("BEGIN IMMEDIATE");
      } catch (err) {
        // The write lock could not be had (another process held it past the busy timeout).
        const mapped = mapError(err);
        for (const p of batch.slice(i)) p.reject(mapped);
        done({ committed: 0, errors: [mapped] });
        return;
      }
      for (; i < batch.length; i++) {
        const p = batch[i]!;
        try {
          ok.push({ p, value: p.run() });
        } catch (err) {
          const mapped = mapError(err);
          errors.push(mapped);
          p.reject(mapped);
          if (!db.inTransaction) {
            // SQLite undid the whole transaction: what it held is not written.
            for (const w of ok) w.p.reject(mapped);
            ok.length = 0;
            i++;
            break;
          }
        }
      }
      if (!db.inTransaction) {
        done({ committed: 0, errors });
        continue;
      }
      try {
        db.exec("COMMIT");
      } catch (err) {
        if (db.inTransaction) db.exec("ROLLBACK");
        const mapped = mapError(err);
        for (const w of ok) w.p.reject(mapped);
        done({ committed: 0, errors: [...errors, mapped] });
        continue;
      }
      done({ committed: ok.length, errors });
      for (const w of ok) w.p.resolve(w.value);
    }
  };

  return {
    enqueue<T>(write: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ run: write, resolve: resolve as (v: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}
