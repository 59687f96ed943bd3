import type { DescMethod } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  type ContextValues,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { kPrincipal } from "../auth/principal.js";
import { type CallInfo, kCallInfo } from "../call-info.js";
import type { Config } from "../config.js";
import { browserToConsole } from "../console-routes.js";
import { addEventsExportRoute } from "../events/export-route.js";
import { addBodyGate } from "../grpc/body-gate.js";
import { connectRoutes } from "../grpc/connect-routes.js";
import { createHealthService } from "../grpc/health.js";
import { reflectionServices } from "../grpc/reflection.js";
import { registerOnRouter } from "../grpc/router-json.js";
import { routerPatchesPlugin } from "../grpc/router-patches.js";
import { addUnaryConnect } from "../grpc/unary-connect.js";
import { createUnaryGrpc } from "../grpc/unary-grpc.js";
import type { Metrics } from "../metrics/metrics.js";
import type { AdmissionCheck } from "../pipeline/admission.js";
import { createRequestLog } from "../pipeline/request-log.js";
import { createUnaryPipeline } from "../pipeline/unary-invocation.js";
import { restGateway } from "../rest/gateway.js";
import { createRpcCalls } from "../rpc-calls.js";
import { registration } from "../service-registration.js";
import { apiServices } from "../service-table.js";
import type { Store } from "../store/store.js";
import type { AuthPlane } from "./auth-plane.js";
import { bodyLimit, type EdgePlane } from "./edge-plane.js";
import type { HealthPlane } from "./health-plane.js";
import type { Plane } from "./planes.js";
import { addRequestLogHooks } from "./request-log-hooks.js";

/** What the RPC plane is built from. */
export interface RpcDeps {
  config: Config;
  store: Store;
  now: () => number;
  metrics: Metrics;
  edge: Pick<EdgePlane, "app" | "onePort" | "errorDomain" | "shutdownSignal">;
  auth: Pick<AuthPlane, "authorizer" | "tokens" | "oidc" | "verifier" | "access">;
  health: HealthPlane;
  /** Interceptors after access and the NUL gate, before the handler: the audit trail's, then a deployment's own. */
  interceptors: Interceptor[];
  /** Admission checks after the token check, before any body is read (rate limits). */
  admissionChecks?: readonly AdmissionCheck[];
}

/** RpcPlane is every RPC the server serves, on every protocol and entry point. */
export interface RpcPlane extends Plane {
  /** Every RPC served, each guarded by an authorization rule. */
  served: readonly DescMethod[];
}

// Where a request served through fastify keeps its CallInfo (the request log reads it back).
const kRequestCallInfo = Symbol("gatehouse call info");
// The request's ContextValues, made once (contextValues below).
const kRequestValues = Symbol("gatehouse context values");

/**
 * Open the RPC plane: one set of implementations and one interceptor list, served by the lean
 * gRPC and Connect paths, the Connect router (gRPC, gRPC-Web, Connect) and the REST gateway
 * alike (docs/call-pipeline.md). Fails closed: an RPC without an authorization rule stops the
 * server from starting.
 */
export async function openRpcPlane(deps: RpcDeps): Promise<RpcPlane> {
  const { config, store, now, edge, auth } = deps;
  const { app, onePort, errorDomain } = edge;
  const log = (msg: string, fields: Record<string, unknown>) => app.log.error(fields, msg);
  // The request's CallInfo rides on the request itself: a WeakMap entry per request was one
  // more young object referenced from a long-lived table at every scavenge.
  const callInfoOf = (req: FastifyRequest) =>
    (req as { [kRequestCallInfo]?: CallInfo })[kRequestCallInfo];
  // One ContextValues a request, whoever asks first (the body gate's refusal check hands the
  // principal it found to the call through them).
  const contextValues = (req: FastifyRequest) => {
    const known = (req as { [kRequestValues]?: ContextValues })[kRequestValues];
    if (known) return known;
    const raw = req.raw as { stream?: { session?: object }; socket?: object };
    const connection = raw.stream?.session ?? raw.socket;
    const info: CallInfo = connection ? { connection, requestId: req.id } : { requestId: req.id };
    (req as { [kRequestCallInfo]?: CallInfo })[kRequestCallInfo] = info;
    const values = createContextValues().set(kCallInfo, info);
    (req as { [kRequestValues]?: ContextValues })[kRequestValues] = values;
    return values;
  };
  // The implementations and the one interceptor list, as every entry point runs a call
  // (src/rpc-calls.ts); what follows serves them on this app's port.
  const { services, interceptors, admission, v1Deprecation } = await createRpcCalls({
    config,
    store,
    now,
    auth,
    errorDomain,
    logError: log,
    logInfo: (fields, msg) => app.log.info(fields, msg),
    interceptors: deps.interceptors,
    admissionChecks: deps.admissionChecks ?? [],
  });
  // v1's REST hook (Deprecation, Sunset, Link) before the gateway's routes.
  v1Deprecation.addRoutes(app);
  // The one unary invocation of the lean paths and REST: the call's context, deadline and
  // shutdown, the interceptors, the implementation and the API error (src/pipeline/).
  const pipeline = createUnaryPipeline({
    interceptors,
    domain: errorDomain,
    log,
    shutdownSignal: edge.shutdownSignal,
  });
  // One line per request, and the RPC metrics, whatever path answered it.
  const requestLog = createRequestLog(v1Deprecation.counting(deps.metrics), (fields, msg) =>
    app.log.info(fields, msg),
  );
  // Every service either server serves: the API, health, and reflection (the API's shape is
  // public: it lists the API services and the error details).
  const registrations = [
    ...services,
    registration(
      Health,
      createHealthService({
        check: deps.health.ready,
        services: apiServices.map((s) => s.typeName),
        // Ends cleanly (status OK) before the connection's idle timeout would cut it off.
        watchIdleMs: Math.floor(onePort.timeouts.idleTimeoutMs * 0.8),
        connectionOf: (ctx) => ctx.values.get(kCallInfo)?.connection,
        // The access interceptor names the caller of a Watch that brought a valid token.
        isAuthenticated: (ctx) => ctx.values.get(kPrincipal) !== undefined,
      }),
    ),
    ...reflectionServices({
      services: [...apiServices, Health],
      files: [file_google_rpc_error_details],
    }),
  ];
  addBodyGate(app, { admission, contextValues });
  // Unary Connect calls (POST, JSON or binary) are answered before the hooks below, which
  // only shape what the Connect router writes (src/grpc/unary-connect.ts).
  if (config.leanPaths) {
    addUnaryConnect(app, {
      registrations,
      pipeline,
      contextValues,
      readMaxBytes: bodyLimit,
      domain: errorDomain,
    });
  }
  // Every patch to what the router reads and answers, in the order it keeps as code.
  // Each RPC's path and its HTTP methods, as the router's routes are added below: another
  // method on one of them is refused (405) by the unknown-RPC patch.
  const servedPaths = new Map<string, readonly string[]>();
  await app.register(routerPatchesPlugin, { domain: errorDomain, served: servedPaths });

  let router: ConnectRouter | undefined;
  await app.register(connectRoutes, {
    served: servedPaths,
    interceptors,
    contextValues,
    // Calls in flight are aborted when the grace period ends (edge-plane's close).
    shutdownSignal: edge.shutdownSignal,
    // API.md "Limits": 1 MiB a message on every protocol, after decompression. The library's
    // default is ~4 GiB; this bound also caps what a compressed message may inflate to.
    readMaxBytes: bodyLimit,
    // One rule for every JSON protocol, as REST has it: an unknown field is INVALID_ARGUMENT.
    jsonOptions: { ignoreUnknownFields: false },
    routes(r) {
      router = r;
      registerOnRouter(r, registrations);
    },
  });
  if (!router) throw new Error("connect routes were not registered");
  // Fail closed: every RPC the router serves (the REST gateway serves the same ones) must
  // have an authorization rule, or the server does not start.
  const served = router.handlers.map((h) => h.method);
  auth.access.guard(served);
  // ExportEvents over REST (JSON Lines): a server stream, which the gateway cannot bind.
  addEventsExportRoute(app, { handlers: router.handlers, contextValues, domain: errorDomain, log });
  // Unary binary gRPC on HTTP/2 skips fastify and connect-node's pipeline: the same
  // implementations and interceptors, answered straight from the stream (src/grpc/unary-grpc.ts).
  if (config.leanPaths) {
    onePort.takeStreams(
      createUnaryGrpc({
        registrations,
        pipeline,
        readMaxBytes: bodyLimit,
        domain: errorDomain,
        admission,
        // A stream being served always has its session.
        contextValues: (stream, requestId) =>
          createContextValues().set(kCallInfo, { connection: stream.session as object, requestId }),
        log: ({ reqId, rpc, code, durationMs }) =>
          requestLog({
            reqId,
            rpc,
            protocol: "grpc",
            status: 200,
            code,
            durationMs,
            counted: true,
          }),
      }),
    );
  }
  // After CORS and Connect: its catch-all leaves their exact routes alone.
  await app.register(restGateway, {
    services,
    pipeline,
    contextValues,
    domain: errorDomain,
    log,
    bodyLimit,
    admission,
    // The token endpoint also takes a posted form, as OAuth-style clients send one.
    formBodies: [`${SecurityTokenService.typeName}/${SecurityTokenService.method.exchange.name}`],
    // A person typing the server's address gets the console, not a JSON 404.
    onNoRoute: browserToConsole,
  });
  addRequestLogHooks(app, { requestLog, callInfoOf });
  return { served };
}
