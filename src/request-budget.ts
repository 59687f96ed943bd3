import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The request body bytes that every call in flight together may hold while its body is read
 * (GATEHOUSE_REQUEST_BUFFER_BYTES): 4 h2c connections once held 1 GiB of bodies, each call
 * within its own 1 MiB limit. Every path charges what it buffers and gives it back when the
 * call has its message (or ends); a chunk that does not fit is refused, not buffered.
 */
export interface RequestBudget {
  /** Charge `n` bytes; false (nothing charged) when they do not fit. */
  take(n: number): boolean;
  /** Give back `n` bytes charged before. */
  give(n: number): void;
  /** Bytes held now. */
  readonly held: number;
}

/** Create a budget of `limit` bytes. */
export function createRequestBudget(limit: number): RequestBudget {
  let held = 0;
  return {
    take(n) {
      if (held + n > limit) return false;
      held += n;
      return true;
    },
    give(n) {
      held = Math.max(0, held - n);
    },
    get held() {
      return held;
    },
  };
}

const exhaustedMessage = "the server is holding too many request bytes; try again later";

/** The error of a call whose body did not fit the budget: RESOURCE_EXHAUSTED. */
export function budgetExhausted(): ConnectError {
  return new ConnectError(exhaustedMessage, Code.ResourceExhausted);
}

/** Whether an error is budgetExhausted()'s: REST answers it 503, the server's state, not the call's. */
export function isBudgetExhausted(err: unknown): boolean {
  return err instanceof ConnectError && err.rawMessage === exhaustedMessage;
}
