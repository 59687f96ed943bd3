import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";
import { Code, type ContextValues, createContextKey, type Interceptor } from "@connectrpc/connect";
import { kCallInfo } from "../call-info.js";
import { invalidField, invalidToken, permissionDenied, unauthenticated } from "../errors.js";
import { requestHeaderOf } from "../pipeline/unary-invocation.js";
import { isAtOrBelow, isUid, parentOf } from "../uid.js";
import { type Authorizer, narrowingAllows } from "./authorizer.js";
import { builtinRole, type Capability } from "./capabilities.js";
import { type Rule, ruleOf } from "./policy.js";
import {
  kListScope,
  kPrincipal,
  type Narrowing,
  narrowingOf,
  type Principal,
} from "./principal.js";
import { TokenError, type TokenFailure, type TokenVerifier, type VerifiedToken } from "./tokens.js";

/** What the access interceptor needs. */
export interface AccessDeps {
  verifier: TokenVerifier;
  /** Whether the identity a token names still exists. */
  identityExists(uid: string): Promise<boolean>;
  /** Whether a sign-in session (a token's `sid`) is still active: not logged out or revoked. */
  sessionActive(sessionId: string): Promise<boolean>;
  /**
   * When the identity's tokens were cut off (a deprovisioning, milliseconds), or 0: a token
   * issued in or before that second is refused, session or not.
   */
  tokenCutoff?(uid: string): Promise<number>;
  authorizer: Authorizer;
  /** Told why a token was refused (never the token itself), with the request's id. */
  onRejectedToken?: (reason: string, requestId: string | undefined) => void;
  /** Told the outcome of every decision about a non-public RPC (for metrics). */
  onDecision?: (outcome: DecisionOutcome) => void;
}

/** How an access decision ended: the call went on, or was refused, and why. */
export type DecisionOutcome = "allowed" | "denied" | "unauthenticated" | "invalid";

/** The outcome of a refused call, from the error it was refused with. */
function outcomeOf(err: unknown): DecisionOutcome {
  const code = (err as { code?: unknown }).code;
  if (code === Code.PermissionDenied) return "denied";
  if (code === Code.Unauthenticated) return "unauthenticated";
  return "invalid";
}

/** A rule compiled for one method: how to read its target uid from the request message. */
type Compiled =
  | { kind: "public"; identifies?: true }
  | { kind: "authenticated" | "deny" }
  | { kind: "adapter"; calls: ReadonlySet<string> }
  | { kind: "list"; capability: Capability }
  | {
      kind: "resource";
      capability: Capability;
      field: string;
      read: (message: unknown) => string;
      root: boolean;
      role: "read" | "write" | undefined;
      self: boolean;
      /** Reads the identity a request asks about, for a `selfField` rule. */
      subject: ((message: unknown) => string) | undefined;
    };

/** AccessControl authenticates and authorizes every call, and knows which RPCs it guards. */
export interface AccessControl {
  /** The interceptor for every protocol. */
  interceptor: Interceptor;
  /**
   * Compile the rules of the methods the server serves. Throws, naming them, if any method
   * has no rule (or a rule that does not fit its request message): the server must not start
   * with an RPC nobody decided about.
   */
  guard(methods: readonly DescMethod[]): void;
  /**
   * What the access interceptor will answer a call to `rpc` (`package.Service/Method`) with
   * this Authorization header, as far as the headers tell: the UNAUTHENTICATED (or, for a
   * method nobody may call, PERMISSION_DENIED) error it will raise, or undefined. The paths
   * ask before they read a request body, so that nobody without a token has one buffered.
   * Given the call's `values`, the principal it found is handed to the interceptor, which
   * then does not authenticate the same header a second time.
   */
  refusal(
    rpc: string,
    authorization: string | null,
    requestId?: string,
    values?: ContextValues,
  ): Promise<Error | undefined>;
  /**
   * Authorize a v2 call that a v1 adapter makes for its caller (policy.ts `adapter`): the v2
   * RPC's own rule, on the v2 request, exactly as if the caller had sent it (a List's scope
   * lands in `values` for the v2 handler). Throws INTERNAL if the running v1 method's rule
   * does not name that v2 RPC, so an adapter cannot call what the table does not say.
   */
  authorizeCall(method: DescMethod, message: unknown, values: ContextValues): Promise<void>;
}

// The principal a refusal check found for the call's Authorization header: the interceptor
// takes it for the same header instead of verifying the token and looking up its identity
// again (twice a call, 4-5% of a GetGroup on every path, issue 38).
const kAuthenticated = createContextKey<
  { header: string | null; principal: Principal } | undefined
>(undefined, { description: "the principal the refusal check found" });

/**
 * The identity the refusal check authenticated for a call (its token was valid), if it did:
 * what the rate limit keys the call by (src/rate-limit/call-limit.ts).
 */
export function checkedIdentity(values: ContextValues): string | undefined {
  return values.get(kAuthenticated)?.principal.identityUid;
}

// The v2 RPCs the running adapter may call, set by the interceptor on an `adapter` rule.
const kAdapterCalls = createContextKey<ReadonlySet<string> | undefined>(undefined, {
  description: "the v2 calls of the running v1 adapter",
});

/**
 * Create the access control that authenticates and authorizes every call, as the policy
 * table (policy.ts) says. It turns the bearer token into a principal (kPrincipal), then
 * requires the rule's capability at the target's group or above, or, for a List, puts the
 * groups the caller may list into kListScope. It fails closed: a call to a method that
 * `guard` was not given is denied, and `guard` refuses a method without a rule.
 */
export function createAccessControl(deps: AccessDeps): AccessControl {
  const compiled = new Map<string, Compiled>();
  const guard = (methods: readonly DescMethod[]) => {
    const missing: string[] = [];
    for (const method of methods) {
      const rpc = `${method.parent.typeName}/${method.name}`;
      const rule = ruleOf(rpc);
      if (rule) compiled.set(rpc, compile(rule, method.input));
      else missing.push(rpc);
    }
    // An adapter's v2 calls must be served RPCs with rules of their own (not adapters).
    for (const method of methods) {
      const rpc = `${method.parent.typeName}/${method.name}`;
      const rule = compiled.get(rpc);
      if (rule?.kind !== "adapter") continue;
      for (const call of rule.calls) {
        const kind = compiled.get(call)?.kind;
        if (kind === undefined || kind === "adapter") missing.push(`${call} (called by ${rpc})`);
      }
    }
    if (missing.length > 0) {
      throw new Error(
        `authorization: no rule for ${missing.join(", ")}; every served RPC needs one in src/auth/policy.ts`,
      );
    }
  };
  const interceptor: Interceptor = (next) => async (req) => {
    const rule = compiled.get(`${req.service.typeName}/${req.method.name}`) ?? { kind: "deny" };
    if (rule.kind === "public") {
      const authorization = requestHeaderOf(req, "authorization");
      if (rule.identifies && authorization !== null) {
        const principal = await authenticate(
          authorization,
          deps,
          req.contextValues.get(kCallInfo)?.requestId,
        ).catch(() => undefined);
        if (principal) req.contextValues.set(kPrincipal, principal);
      }
      return next(req);
    }
    try {
      await check(req, rule);
    } catch (err) {
      deps.onDecision?.(outcomeOf(err));
      throw err;
    }
    deps.onDecision?.("allowed");
    return next(req);
  };
  // Authenticate the caller and apply the method's rule; throws to refuse the call.
  const check = async (req: Parameters<Parameters<Interceptor>[0]>[0], rule: Compiled) => {
    if (rule.kind === "public") return;
    if (rule.kind === "deny") throw permissionDenied(req.method.name);
    const header = requestHeaderOf(req, "authorization");
    const checked = req.contextValues.get(kAuthenticated);
    const principal =
      checked !== undefined && checked.header === header
        ? checked.principal
        : await authenticate(header, deps, req.contextValues.get(kCallInfo)?.requestId);
    req.contextValues.set(kPrincipal, principal);
    if (rule.kind === "adapter") req.contextValues.set(kAdapterCalls, rule.calls);
    else await decide(rule, principal, req.message, req.contextValues);
  };
  const authorizeCall = async (method: DescMethod, message: unknown, values: ContextValues) => {
    const rpc = `${method.parent.typeName}/${method.name}`;
    if (!values.get(kAdapterCalls)?.has(rpc)) {
      throw new Error(`authorization: the running adapter's rule does not name ${rpc}`);
    }
    const rule = compiled.get(rpc) ?? { kind: "deny" };
    const principal = values.get(kPrincipal);
    if (!principal) throw unauthenticated();
    if (rule.kind === "deny" || rule.kind === "adapter") throw permissionDenied(method.name);
    if (rule.kind === "public") return;
    await decide(rule, principal, message, values);
  };
  const decide = async (
    rule: Exclude<Compiled, { kind: "public" | "deny" | "adapter" }>,
    principal: Principal,
    message: unknown,
    values: ContextValues,
  ): Promise<void> => {
    switch (rule.kind) {
      case "authenticated":
        break;
      case "list":
        values.set(kListScope, await deps.authorizer.listScope(principal, rule.capability));
        break;
      case "resource": {
        const target = rule.read(message);
        if (target === "" && rule.root) {
          // A token narrowed to a group, or to capabilities without this one, makes none.
          if (!isPerson(principal) || !narrowingAllows(principal, rule.capability, target)) {
            throw permissionDenied(rule.capability);
          }
          break;
        }
        if (target === "") throw invalidField(rule.field, "is required");
        if (!isUid(target)) throw invalidField(rule.field, "is not a valid uid");
        // About oneself no binding is needed; a narrowed token's narrowing still is.
        const own = narrowingAllows(principal, rule.capability, target);
        if (own && rule.self && target === principal.identityUid) break;
        if (own && rule.subject?.(message) === principal.identityUid) break;
        if (rule.role && (builtinRole(target) || rule.role === "read")) {
          await requireForRole(principal, rule.capability, target, deps.authorizer);
          break;
        }
        await deps.authorizer.require(principal, rule.capability, target);
        break;
      }
    }
  };
  const refusal = async (
    rpc: string,
    authorization: string | null,
    requestId?: string,
    values?: ContextValues,
  ) => {
    const rule = compiled.get(rpc) ?? { kind: "deny" };
    if (rule.kind === "public") return undefined;
    // A call refused here never reaches the interceptor: its decision is counted here. One
    // that passes is decided (and counted) by the interceptor.
    const refused = (err: Error) => {
      deps.onDecision?.(outcomeOf(err));
      return err;
    };
    if (rule.kind === "deny") return refused(permissionDenied(rpc.slice(rpc.indexOf("/") + 1)));
    return authenticate(authorization, deps, requestId).then(
      (principal) => {
        values?.set(kAuthenticated, { header: authorization, principal });
        return undefined;
      },
      (e: unknown) => refused(e instanceof Error ? e : new Error(String(e))),
    );
  };
  return { interceptor, guard, refusal, authorizeCall };
}

/**
 * Allow a role target as policy.ts says: a built-in role for anyone holding the capability
 * somewhere; a custom role from its group, above it or below it.
 */
async function requireForRole(
  principal: Principal,
  capability: Capability,
  uid: string,
  authorizer: Authorizer,
): Promise<void> {
  const scope = await authorizer.listScope(principal, capability);
  const group = parentOf(uid);
  const allowed = builtinRole(uid)
    ? scope.length > 0
    : group !== "" && scope.some((s) => isAtOrBelow(s, group) || isAtOrBelow(group, s));
  if (!allowed) throw permissionDenied(capability);
}

/** A person's root identity has a root uid; workload identities live in a group. */
function isPerson(p: Principal): boolean {
  return !p.identityUid.includes("/");
}

/**
 * Why a presented Gatehouse token was refused, as the caller may be told: what the token
 * itself says (its expiry, audience, issuer) is no secret to its bearer. Anything else (a bad
 * signature, a malformed token, an identity that is gone) is just not valid.
 */
const refusals: Partial<Record<TokenFailure, [reason: string, description: string]>> = {
  expired: ["TOKEN_EXPIRED", "the bearer token has expired"],
  not_yet_valid: ["TOKEN_NOT_YET_VALID", "the bearer token is not valid yet"],
  bad_audience: ["WRONG_AUDIENCE", "the bearer token is for another audience"],
  bad_issuer: ["UNKNOWN_ISSUER", "the bearer token is from another issuer"],
};
const notValid: [string, string] = ["INVALID_TOKEN", "the bearer token is not valid"];

async function authenticate(
  header: string | null,
  deps: AccessDeps,
  requestId: string | undefined,
): Promise<Principal> {
  const match = header === null ? null : /^Bearer +([^\s]+) *$/i.exec(header);
  if (!match?.[1]) throw unauthenticated();
  let verified: VerifiedToken;
  try {
    verified = await deps.verifier.verify(match[1]);
  } catch (err) {
    if (!(err instanceof TokenError)) throw err;
    deps.onRejectedToken?.(err.reason, requestId);
    throw invalidToken(...(refusals[err.reason] ?? notValid));
  }
  const { sub, email, sid, iat } = verified;
  if (!(await deps.identityExists(sub))) {
    deps.onRejectedToken?.("identity_gone", requestId);
    throw invalidToken(...notValid);
  }
  if (sid !== undefined && !(await deps.sessionActive(sid))) {
    deps.onRejectedToken?.("session_revoked", requestId);
    throw invalidToken("SESSION_REVOKED", "the sign-in session of the bearer token has ended");
  }
  if (deps.tokenCutoff && cutOff(iat, await deps.tokenCutoff(sub))) {
    deps.onRejectedToken?.("token_cut_off", requestId);
    throw invalidToken("SESSION_REVOKED", "the sign-in session of the bearer token has ended");
  }
  const narrowing = narrowingOfToken(verified);
  return {
    identityUid: sub,
    ...(email === undefined ? {} : { email }),
    ...(narrowing === undefined ? {} : { narrowing }),
  };
}

// A verified token is cached and shared (tokens.ts): its narrowing is built once with it.
const narrowings = new WeakMap<VerifiedToken, Narrowing>();
function narrowingOfToken(token: VerifiedToken): Narrowing | undefined {
  if (token.cap === undefined && token.grp === undefined) return undefined;
  let n = narrowings.get(token);
  if (!n) {
    n = narrowingOf(token) as Narrowing;
    narrowings.set(token, n);
  }
  return n;
}

/**
 * Whether a token issued at `iat` (seconds) is ended by a cutoff at `cutoffMs`: issue times
 * have whole seconds, so a token of the cutoff's own second is refused too (fail closed).
 */
export function cutOff(iat: number, cutoffMs: number): boolean {
  return cutoffMs > 0 && iat <= Math.floor(cutoffMs / 1000);
}

function compile(rule: Rule, input: DescMessage): Compiled {
  if (rule.kind === "adapter") return { kind: "adapter", calls: new Set(rule.calls) };
  if (rule.kind !== "resource") return rule;
  return {
    kind: "resource",
    capability: rule.capability,
    field: rule.target,
    read: fieldReader(input, rule.target),
    root: rule.root === "person",
    role: rule.role,
    self: rule.self === true,
    subject: rule.selfField === undefined ? undefined : fieldReader(input, rule.selfField),
  };
}

/**
 * A reader of a string field at a dotted proto path (`group.uid`), checked against the
 * message descriptor at start-up so a typo in the policy table fails loudly, not open.
 */
function fieldReader(input: DescMessage, path: string): (message: unknown) => string {
  const localNames: string[] = [];
  let desc: DescMessage | undefined = input;
  for (const name of path.split(".")) {
    const field: DescField | undefined = desc?.fields.find((f) => f.name === name);
    if (!field) throw new Error(`policy: ${input.typeName} has no field ${path}`);
    localNames.push(field.localName);
    desc = field.fieldKind === "message" ? field.message : undefined;
  }
  return (message) => {
    let v: unknown = message;
    for (const n of localNames) v = (v as Record<string, unknown> | undefined)?.[n];
    return typeof v === "string" ? v : "";
  };
}
