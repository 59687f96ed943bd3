import { type ContextValues, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { BudgetShare, RequestBudget } from "../request-budget.js";

// Admission: what every entry point (REST, the lean gRPC and Connect paths, and connect-node's
// router for Connect, gRPC-Web and gRPC) decides about a call before it reads a byte of its
// body, in one place. The token check first (a call that needs a token and came without a
// valid one never has its body read, issue 23), then the admission checks the server adds
// (rate limits), then the request budget's share its body is charged to.

/** What admission knows of a call before its body. */
export interface AdmissionRequest {
  /** `package.Service/Method`; undefined for a request that names no RPC (a REST path no rule has). */
  readonly rpc: string | undefined;
  /** The Authorization header, if any. */
  readonly authorization: string | null;
  readonly requestId: string;
  /** The call's context values: the token check leaves the principal it found there. */
  readonly values: ContextValues | undefined;
  /** The client's address. */
  readonly address: string | undefined;
}

/**
 * A check of a call's admission, after its token was checked and before its body is read:
 * the error the call is refused with (a ConnectError, e.g. RESOURCE_EXHAUSTED), or undefined
 * to let it through. It sees calls that need no token too, and requests that name no RPC.
 */
export type AdmissionCheck = (
  request: AdmissionRequest,
) => Error | undefined | Promise<Error | undefined>;

/** The outcome of admission: refused with an error, or admitted with its body's budget share. */
export type Admitted =
  | { readonly refused: Error; readonly share?: undefined }
  | { readonly refused?: undefined; readonly share: BudgetShare };

/** Options of createAdmission. */
export interface AdmissionOptions {
  /**
   * What access control answers the call from its headers (AccessControl.refusal): undefined
   * for a public call or a valid token, else the error the call is refused with.
   */
  tokenCheck: (
    rpc: string,
    authorization: string | null,
    requestId?: string,
    values?: ContextValues,
  ) => Promise<Error | undefined>;
  /** The bytes all request bodies in flight may hold. */
  budget: RequestBudget;
  /** Further checks, run in order after the token check (rate limits). */
  checks?: readonly AdmissionCheck[];
}

/** Call admission, as every entry point runs it. */
export interface Admission {
  /** Decide on a call before its body is read. */
  admit(request: AdmissionRequest): Promise<Admitted>;
  /**
   * Mark a refused call in its context values, for the paths that still run it through the
   * interceptors on a stand-in body (the router, the lean gRPC path): `interceptor` refuses it.
   */
  refuseInChain(values: ContextValues, err: Error): void;
  /**
   * The interceptor that refuses a call admission refused, with admission's error. Place it
   * before the access interceptor: a refused call then never reaches the handler's chain.
   */
  readonly interceptor: Interceptor;
}

const kRefused = createContextKey<Error | undefined>(undefined, {
  description: "the error admission refused the call with",
});

/** Create the admission stage of a server. */
export function createAdmission(opts: AdmissionOptions): Admission {
  const checks = opts.checks ?? [];
  return {
    async admit(request) {
      if (request.rpc !== undefined) {
        const refused = await opts.tokenCheck(
          request.rpc,
          request.authorization,
          request.requestId,
          request.values,
        );
        if (refused) return { refused };
      }
      for (const check of checks) {
        const refused = await check(request);
        if (refused) return { refused };
      }
      // A public call's body is charged apart, per client address (request-budget.ts).
      return { share: opts.budget.forCall(request.rpc, request.address) };
    },
    refuseInChain(values, err) {
      values.set(kRefused, err);
    },
    interceptor: (next) => (req) => {
      const refused = req.contextValues.get(kRefused);
      if (refused) throw refused;
      return next(req);
    },
  };
}
