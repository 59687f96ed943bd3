import {
  ConnectError,
  type ContextValues,
  createContextKey,
  type Interceptor,
} from "@connectrpc/connect";
import { kCallInfo } from "../call-info.js";
import { clientAddress } from "./client-address.js";
import { rateLimitError } from "./rate-limit-error.js";
import type { RateLimitSettings } from "./rate-limit-settings.js";
import { createTokenBuckets, type RatePolicy } from "./token-buckets.js";

/**
 * What call admission asks before it reads a body (AccessControl.refusal): the error the call
 * will be refused with, or undefined.
 */
export type Refusal = (
  rpc: string,
  authorization: string | null,
  requestId?: string,
  values?: ContextValues,
) => Promise<Error | undefined>;

/** What the call limit is built from. */
export interface CallLimitDeps {
  readonly settings: RateLimitSettings;
  readonly now: () => number;
  /** Access control's refusal check, which the limit wraps. */
  readonly refusal: Refusal;
  /**
   * The identity uid the refusal check authenticated for this call (its token was valid), or
   * undefined.
   */
  readonly identityOf: (values: ContextValues) => string | undefined;
  /** The STS exchange RPCs (`package.Service/Method`): their own bucket, per client address. */
  readonly stsRpcs: ReadonlySet<string>;
  /** RPCs that are never limited (health checks). */
  readonly exempt: ReadonlySet<string>;
}

/** The rate limit of every RPC, on every protocol (docs/api.md "Rate limits"). */
export interface CallLimit {
  /**
   * Access control's refusal check, then the call's rate limit: the call's bucket is charged
   * once its caller is known and before its body is read. A call over its limit is refused
   * with rateLimitError() (which the paths answer as they answer any refusal: REST at once,
   * 429 with its headers; the RPC paths through the interceptor below), whatever its token.
   */
  readonly refusal: Refusal;
  /**
   * The interceptor that raises a limit's refusal on the RPC paths (placed before access
   * control, so a flood of bad tokens is told RESOURCE_EXHAUSTED, not UNAUTHENTICATED). A
   * call that reached it without the check above (any path that does not ask) is checked
   * here: the limit fails closed.
   */
  readonly interceptor: Interceptor;
}

// What the check decided for a call: admitted (true) or the refusal to raise.
const kLimitVerdict = createContextKey<true | ConnectError | undefined>(undefined, {
  description: "the call's rate-limit verdict",
});

const passThrough: Interceptor = (next) => next;

/**
 * Create the call limit. Without any limit set, it is access control's check itself and an
 * interceptor that does nothing: an install with no limits pays nothing for them.
 */
export function createCallLimit(deps: CallLimitDeps): CallLimit {
  const { settings } = deps;
  if (!settings.api && !settings.sts) return { refusal: deps.refusal, interceptor: passThrough };
  // Identities and addresses apart: a key made by concatenation ("i:" + uid) cost a string
  // and its hash per call.
  const identities = createTokenBuckets(deps.now);
  const addresses = createTokenBuckets(deps.now);
  const sts = createTokenBuckets(deps.now);
  const apiPolicy = settings.api;
  const hasOverrides = settings.organizations.size > 0;
  const policyOf = (uid: string): RatePolicy | undefined | null => {
    if (!hasOverrides) return apiPolicy;
    const slash = uid.indexOf("/");
    // A person's root identity belongs to no organization: the default applies.
    const own = slash < 0 ? undefined : settings.organizations.get(uid.slice(0, slash));
    return own === undefined ? apiPolicy : own;
  };

  // The refusal of a call over its limit, or undefined; `refused` is access control's answer.
  const check = (rpc: string, refused: Error | undefined, values: ContextValues | undefined) => {
    if (deps.exempt.has(rpc)) return undefined;
    if (deps.stsRpcs.has(rpc)) {
      if (!settings.sts) return undefined;
      const address = clientAddress(values?.get(kCallInfo)?.connection);
      const wait = sts.take(address, settings.sts);
      return wait === 0 ? undefined : rateLimitError(settings.sts, wait, `address:${address}`);
    }
    if (!apiPolicy && !hasOverrides) return undefined;
    const uid = refused === undefined && values ? deps.identityOf(values) : undefined;
    if (uid !== undefined) {
      const policy = policyOf(uid);
      if (!policy) return undefined;
      const wait = identities.take(uid, policy);
      return wait === 0 ? undefined : rateLimitError(policy, wait, `identity:${uid}`);
    }
    // No valid token (or a public RPC): the client address's bucket, under the default.
    if (!apiPolicy) return undefined;
    const address = clientAddress(values?.get(kCallInfo)?.connection);
    const wait = addresses.take(address, apiPolicy);
    return wait === 0 ? undefined : rateLimitError(apiPolicy, wait, `address:${address}`);
  };

  const refusal: Refusal = (rpc, authorization, requestId, values) =>
    deps.refusal(rpc, authorization, requestId, values).then((refused) => {
      const limited = check(rpc, refused, values);
      values?.set(kLimitVerdict, limited ?? true);
      return limited ?? refused;
    });

  // Not async when admission has decided (every path but one that forgot to ask): a call
  // the limit let through pays a lookup, not a promise.
  const interceptor: Interceptor = (next) => (req) => {
    const verdict = req.contextValues.get(kLimitVerdict);
    if (verdict === true) return next(req);
    if (verdict instanceof ConnectError) return Promise.reject(verdict);
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const requestId = req.contextValues.get(kCallInfo)?.requestId;
    return refusal(rpc, req.header.get("authorization"), requestId, req.contextValues).then(() => {
      const checked = req.contextValues.get(kLimitVerdict);
      if (checked instanceof ConnectError) throw checked;
      return next(req);
    });
  };

  return { refusal, interceptor };
}
