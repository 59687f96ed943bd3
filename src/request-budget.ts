import { Code, ConnectError } from "@connectrpc/connect";

/** What one call's body is charged to: a share of the request budget. */
export interface BudgetShare {
  /** Charge `n` bytes; false (nothing charged) when they do not fit. */
  take(n: number): boolean;
  /** Give back `n` bytes charged before. */
  give(n: number): void;
}

/**
 * The request body bytes that every call in flight together may hold while its body is read
 * (GATEHOUSE_REQUEST_BUFFER_BYTES): 4 h2c connections once held 1 GiB of bodies, each call
 * within its own 1 MiB limit. Every path charges what it buffers to its call's share and
 * gives it back when the call has its message (or ends); a chunk that does not fit is
 * refused, not buffered.
 *
 * Calls anyone may make without a token (the STS exchange, health, reflection, and any path
 * that is no RPC) are charged apart, to a small public budget and a smaller one per client
 * address: a stranger once held the whole budget with slow STS bodies, and 16 of 20 owner
 * calls with a body were refused (issue 35 N2). A call that needs a token has its body read
 * only once its token is valid, so only callers with a token spend the main budget.
 */
export interface RequestBudget {
  /** The share that the body of a call to `rpc` (undefined: no RPC) from `address` is charged to. */
  forCall(rpc: string | undefined, address: string | undefined): BudgetShare;
  /** Bytes held now by calls that needed a token. */
  readonly held: number;
  /** Bytes held now by calls anyone may make. */
  readonly heldPublic: number;
}

/** Options of createRequestBudget. */
export interface RequestBudgetOptions {
  /** Bytes the bodies of calls that need a token may hold together. */
  limit: number;
  /** Whether an RPC (`package.Service/Method`) is served without a token. */
  isPublic(rpc: string): boolean;
  /** Bytes the bodies of public calls may hold together; default publicBudgetOf(limit). */
  publicLimit?: number;
  /** ...and those from one client address; default perAddressBudgetOf(limit). */
  perAddressLimit?: number;
}

const MiB = 1024 * 1024;

/**
 * The public budget of a request budget: an eighth of it (8 MiB of the default 64 MiB), at
 * least 256 KiB. Public calls carry small bodies (an STS exchange is a token or two).
 */
export function publicBudgetOf(limit: number): number {
  return Math.max(256 * 1024, Math.floor(limit / 8));
}

/** The public budget of one client address: 1 MiB, or the public budget if smaller. */
export function perAddressBudgetOf(limit: number): number {
  return Math.min(MiB, publicBudgetOf(limit));
}

/** Create the request budget. */
export function createRequestBudget(opts: RequestBudgetOptions): RequestBudget {
  const publicLimit = opts.publicLimit ?? publicBudgetOf(opts.limit);
  const perAddressLimit = opts.perAddressLimit ?? perAddressBudgetOf(opts.limit);
  let held = 0;
  let heldPublic = 0;
  const byAddress = new Map<string, number>();
  const authenticated: BudgetShare = {
    take(n) {
      if (held + n > opts.limit) return false;
      held += n;
      return true;
    },
    give(n) {
      held = Math.max(0, held - n);
    },
  };
  const publicShare = (address: string): BudgetShare => ({
    take(n) {
      const mine = byAddress.get(address) ?? 0;
      if (heldPublic + n > publicLimit || mine + n > perAddressLimit) return false;
      heldPublic += n;
      byAddress.set(address, mine + n);
      return true;
    },
    give(n) {
      const mine = byAddress.get(address) ?? 0;
      const back = Math.min(n, mine);
      heldPublic = Math.max(0, heldPublic - back);
      // An address holding nothing has no entry: the map is as large as the clients holding.
      if (mine - back > 0) byAddress.set(address, mine - back);
      else byAddress.delete(address);
    },
  });
  return {
    forCall(rpc, address) {
      if (rpc !== undefined && !opts.isPublic(rpc)) return authenticated;
      return publicShare(address ?? "");
    },
    get held() {
      return held;
    },
    get heldPublic() {
      return heldPublic;
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
