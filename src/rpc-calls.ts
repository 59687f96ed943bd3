import { randomBytes } from "node:crypto";
import type { Interceptor } from "@connectrpc/connect";
import { SecurityTokenService } from "../gen/gatehouse/sts/v1/sts_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { checkedIdentity, cutOff } from "./auth/access-interceptor.js";
import type { AccessParts } from "./auth/access-parts.js";
import { ruleOf } from "./auth/policy.js";
import { readingStore } from "./call-store.js";
import type { Config } from "./config.js";
import { createDeadlineGate } from "./deadline-gate.js";
import { createV1Deprecation, type V1Deprecation } from "./deprecation/v1-deprecation.js";
import type { ErrorLogger } from "./errors.js";
import { createErrorInterceptor } from "./interceptors.js";
import { createListEngine } from "./list/list.js";
import { type Admission, type AdmissionCheck, createAdmission } from "./pipeline/admission.js";
import { createCallLimit } from "./rate-limit/call-limit.js";
import { createRequestBudget } from "./request-budget.js";
import { createServiceImpls } from "./service-impls.js";
import type { ServiceRegistration } from "./service-registration.js";
import { serviceEntries } from "./service-table.js";
import type { Store } from "./store/store.js";
import { createNulGate } from "./validation/string-rules.js";

/** What the API's calls are built from: no port, no app. */
export interface RpcCallsDeps {
  config: Config;
  store: Store;
  now: () => number;
  /** Who a caller is and what they may do (createAccessParts). */
  auth: Pick<AccessParts, "authorizer" | "tokens" | "oidc" | "verifier" | "access">;
  /** The ErrorInfo domain of every API error (`iam.<domain>`). */
  errorDomain: string;
  /** Where an unexpected error is logged with its cause. */
  logError: ErrorLogger;
  /** Where a refused token exchange is logged. */
  logInfo: (fields: Record<string, unknown>, msg: string) => void;
  /** Interceptors after access and the NUL gate, before the handler: the audit trail's, then a deployment's own. */
  interceptors: readonly Interceptor[];
  /** Admission checks after the token check, before any body is read (rate limits). */
  admissionChecks?: readonly AdmissionCheck[];
}

/** RpcCalls is every API call as the server runs it, whatever carries it. */
export interface RpcCalls {
  /** Every API service's implementation (createServiceImpls), in the service table's order. */
  services: ServiceRegistration[];
  /** The one interceptor list every entry point runs a call through, in order. */
  interceptors: Interceptor[];
  /** Call admission, before any body is read (src/pipeline/admission.ts). */
  admission: Admission;
  /** v1's deprecation window: its REST routes and its call counts are the plane's to add. */
  v1Deprecation: V1Deprecation;
}

/**
 * Build the API's calls: the implementations and the interceptor chain (errors, v1's
 * deprecation, the deadline gate, rate limits, admission, access control, the NUL gate, then
 * `interceptors`). The RPC plane serves these on every protocol (src/planes/rpc-plane.ts);
 * a test may serve them through connect-es's in-memory router transport, with the same
 * authorization and the same handlers, and no socket.
 */
export async function createRpcCalls(deps: RpcCallsDeps): Promise<RpcCalls> {
  const { config, store, now, auth, errorDomain } = deps;
  const pageTokenKey = await store.getOrCreateSecret("page-token-key", () => randomBytes(32));
  const lists = createListEngine({ key: pageTokenKey, now });
  const { access, verifier } = auth;
  const services = createServiceImpls({
    // Reads only: each change a handler makes goes through the store's view its call hands it
    // (storeOf(ctx), made by the audit interceptor), which records who made it.
    store: readingStore(store),
    lists,
    now,
    authorizer: auth.authorizer,
    tokens: auth.tokens,
    oidc: auth.oidc,
    config,
    onRefused: (fields) => deps.logInfo(fields, "token exchange refused"),
    // An API token (the base URL's audience only) may be exchanged for a registry-audience one.
    apiTokens: {
      verify: (token) => verifier.verify(token),
      active: async (sub, sid, iat) =>
        (await store.identityExists(sub)) &&
        (sid === undefined || (await store.sessionActive(sid))) &&
        !cutOff(iat, await store.tokenCutoff(sub)),
    },
    authorizeCall: access.authorizeCall,
  });
  // Call admission, before any body is read, on every entry point (src/pipeline/admission.ts):
  // the token check, then `admissionChecks` (rate limits go there), then the request budget
  // that every path's bodies share (issue 23).
  // The rate limits (docs/api.md "Rate limits") wrap access control's token check: a call is
  // charged once its caller is known (or its address, without a valid token), before its body.
  const limits = createCallLimit({
    settings: config.rateLimits,
    now,
    refusal: access.refusal,
    identityOf: checkedIdentity,
    stsRpcs: new Set([
      `${SecurityTokenService.typeName}/${SecurityTokenService.method.exchange.name}`,
    ]),
    exempt: new Set(Health.methods.map((m) => `${Health.typeName}/${m.name}`)),
  });
  // v1's deprecation window: Deprecation, Sunset and Link on every v1 answer, and its calls
  // counted (docs/v1-migration.md "Deprecation").
  const v1Deprecation = createV1Deprecation({
    settings: config.v1Deprecation,
    services: serviceEntries.filter((e) => e.adapter).map((e) => e.service),
    baseUrl: config.baseUrl,
  });
  const admission = createAdmission({
    tokenCheck: limits.refusal,
    budget: createRequestBudget({
      limit: config.requestBufferBytes,
      // An RPC with no rule is refused before its body is read; counted public all the same.
      isPublic: (rpc) => (ruleOf(rpc)?.kind ?? "public") === "public",
    }),
    checks: deps.admissionChecks ?? [],
  });
  const interceptors = [
    createErrorInterceptor(errorDomain, deps.logError),
    // Outside every refusal, so that a refused v1 call carries the headers too.
    v1Deprecation.interceptor,
    // A call whose deadline had passed on arrival is not run, even unauthenticated.
    createDeadlineGate(),
    // Before access: a call over its limit is refused as such, whatever its token (and a
    // path that skipped admission's check, Connect GET, is charged here).
    limits.interceptor,
    // A call admission refused is refused here, before access decides anything.
    admission.interceptor,
    access.interceptor,
    // After access: an unauthorized caller learns nothing of what validation thinks.
    createNulGate(),
    ...deps.interceptors,
  ];
  return { services, interceptors, admission, v1Deprecation };
}
