import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { DescMethod } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  cors as connectCors,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import fastifyCors from "@fastify/cors";
import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import { SecurityTokenService } from "../gen/gatehouse/sts/v1/sts_pb.js";
import { file_google_rpc_error_details } from "../gen/google/rpc/error_details_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { checkedIdentity, createAccessControl } from "./auth/access-interceptor.js";
import { type Authorizer, createAuthorizer } from "./auth/authorizer.js";
import { createKeyRing, type KeyRing } from "./auth/keyring.js";
import { createUpstream } from "./auth/login/upstream.js";
import { oauthRoutes } from "./auth/oauth/oauth-routes.js";
import { signInProviderRoutes } from "./auth/oauth/sign-in-providers.js";
import { createOidcVerifier } from "./auth/oidc/oidc-verifier.js";
import { ruleOf } from "./auth/policy.js";
import { kPrincipal } from "./auth/principal.js";
import { createTokenIssuer, createTokenVerifier, type TokenIssuer } from "./auth/tokens.js";
import { wellKnownRoutes } from "./auth/well-known-routes.js";
import { type CallInfo, kCallInfo } from "./call-info.js";
import type { Config } from "./config.js";
import { browserToConsole, consoleDir, consoleRoutes } from "./console-routes.js";
import { createDeadlineGate } from "./deadline-gate.js";
import { createV1Deprecation } from "./deprecation/v1-deprecation.js";
import { toApiError } from "./errors.js";
import { createAuditInterceptor } from "./events/audit-interceptor.js";
import { createEventRetention, pruneIntervalMs } from "./events/event-retention.js";
import { addBodyGate } from "./grpc/body-gate.js";
import { addConnectJsonTimes } from "./grpc/connect-json-times.js";
import { addDeadlineClamp } from "./grpc/deadline-clamp.js";
import { addGrpcMessageEncoding } from "./grpc/grpc-message-encoding.js";
import { addGrpcWebErrorInfo } from "./grpc/grpc-web-error-info.js";
import { addGrpcWebText } from "./grpc/grpc-web-text.js";
import { createHealthService } from "./grpc/health.js";
import { healthRoutes } from "./grpc/health-routes.js";
import { reflectionServices } from "./grpc/reflection.js";
import { addConnectParseErrorStatus } from "./grpc/request-parse-errors.js";
import { rpcPath } from "./grpc/rpc-path.js";
import { addUnaryConnect } from "./grpc/unary-connect.js";
import { createUnaryGrpc } from "./grpc/unary-grpc.js";
import { addUnknownRpcAnswer } from "./grpc/unknown-rpc.js";
import { createErrorInterceptor } from "./interceptors.js";
import { createListEngine } from "./list/list.js";
import { createMetrics, type Metrics, noMetrics, type Protocol } from "./metrics/metrics.js";
import { createMetricsListener, type MetricsListener } from "./metrics/metrics-listener.js";
import { storeOperations, timedStore } from "./metrics/timed-store.js";
import { createOnePort, type OnePort, type Timeouts } from "./one-port.js";
import { docsRoutes, packageVersion } from "./openapi/docs-routes.js";
import { buildOpenApiDocument } from "./openapi/openapi-document.js";
import { startPeriodic } from "./periodic-job.js";
import { createRequestLog, requestIdOf } from "./pipeline/request-log.js";
import { createUnaryPipeline } from "./pipeline/unary-invocation.js";
import { createCallLimit } from "./rate-limit/call-limit.js";
import { addRouteLimits } from "./rate-limit/route-limits.js";
import { registryNotificationRoutes } from "./registry/notification-routes.js";
import { createRegistryNames } from "./registry/registry-names.js";
import { createRegistryTokenSigner } from "./registry/registry-tokens.js";
import { registryTokenRoutes } from "./registry/token-routes.js";
import { createRequestBudget } from "./request-budget.js";
import { toRestErrorBody } from "./rest/error-body.js";
import { createFrameworkErrorHandler } from "./rest/error-reply.js";
import { restGateway } from "./rest/gateway.js";
import { createServiceImpls, registerServices } from "./service-impls.js";
import { registration } from "./service-registration.js";
import { apiServices, protocolServices, serviceEntries } from "./service-table.js";
import { createIdentityMatcher } from "./services/sts/identity-match.js";
import type { Store } from "./store/store.js";
import { createNulGate } from "./validation/string-rules.js";
import { createWebhookDelivery } from "./webhooks/webhooks.js";

// Where a request served through fastify keeps its CallInfo (the request log reads it back).
const kRequestCallInfo = Symbol("gatehouse call info");
// The request's ContextValues, made once (contextValues below).
const kRequestValues = Symbol("gatehouse context values");

/** What a server is built from; tests pass their own store and clock. */
export interface ServerDeps {
  config: Config;
  store: Store;
  now?: () => number;
  /** Where log lines go (default: stdout); tests capture them here. */
  logStream?: { write(line: string): void };
  /** Interceptors that run after the error and access interceptors, before the handler. */
  interceptors?: Interceptor[];
  /** Connection timeouts (default: createOnePort's production values); tests shorten them. */
  timeouts?: Partial<Timeouts>;
  /** The built web console (default: dist/console of the package). */
  consoleDir?: string;
  /** DNS TXT lookups for the verification of domain claims (default node:dns); tests fake it. */
  resolveTxt?: (name: string) => Promise<string[][]>;
  /**
   * Record the audit trail (default true). Only the events benchmark turns it off, to measure
   * what it costs: a served change without its event is not an option of the product.
   */
  auditTrail?: boolean;
}

/** Server is a built, not yet listening, Gatehouse. */
export interface Server {
  app: FastifyInstance;
  /** Signs Gatehouse tokens (iss: the auth URL) with the newest key of the ring. */
  tokens: TokenIssuer;
  /** The signing keys, in the store: rotation and the published JWKS. */
  keyRing: KeyRing;
  /** The authorization decisions, for services added beside the API (STS, CLI). */
  authorizer: Authorizer;
  /** Every RPC the server serves, each guarded by an authorization rule. */
  served: readonly DescMethod[];
  /** Listen on the configured host and port (port 0 picks a free one), for every protocol. */
  listen(): Promise<AddressInfo>;
  /** What the server records for Prometheus (noMetrics when GATEHOUSE_METRICS_PORT is empty). */
  metrics: Metrics;
  /** The metrics listener's port once listening (GATEHOUSE_METRICS_PORT), if it is on. */
  readonly metricsPort: number | undefined;
  /** Stop accepting, finish in-flight calls, close the app. The store is the caller's. */
  close(): Promise<void>;
}

/** The longest /readyz and the health service wait for the database. */
const readyTimeoutMs = 1_000;
/** API.md "Limits": request bodies at most 1 MiB, on every protocol. */
const bodyLimit = 1024 * 1024;

/** Build the server: one fastify app serving every protocol, not yet listening. */
export async function createServer(deps: ServerDeps): Promise<Server> {
  const { config } = deps;
  // Metrics are recorded only when they are served: off, the hot paths call empty functions
  // and the store is not wrapped.
  const metrics: Metrics =
    config.metricsPort === undefined
      ? noMetrics
      : createMetrics({
          services: [...apiServices, ...protocolServices.map((p) => p.service)],
          storeOperations: storeOperations(deps.store),
          accessCache: () => deps.store.accessCacheCounts(),
          tokenRpcs: {
            [`${SecurityTokenService.typeName}/${SecurityTokenService.method.exchange.name}`]:
              "sts_exchange",
          },
        });
  const store = metrics === noMetrics ? deps.store : timedStore(deps.store, metrics);
  const now = deps.now ?? Date.now;
  // ErrorInfo.domain of every error, whatever the protocol.
  const errorDomain = `iam.${config.domain}`;
  const tls = config.tlsCertPath
    ? { cert: readFileSync(config.tlsCertPath), key: readFileSync(config.tlsKeyPath) }
    : undefined;
  const onePort: OnePort = createOnePort(tls, {
    ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
    limits: {
      maxConnections: config.maxConnections,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      maxPipelinedRequests: config.maxPipelinedRequests,
      maxUnsentBytes: config.maxUnsentBytes,
      unsentStallMs: config.unsentStallMs,
    },
    // API.md's error body, as every other refusal has it.
    pipelineRefusalBody: JSON.stringify(
      toRestErrorBody(
        toApiError(
          new ConnectError(
            "too many pipelined requests on this connection; send the rest on a new connection",
            Code.Unavailable,
          ),
          errorDomain,
          () => undefined,
        ),
      ),
    ),
  });
  const authPath = new URL(config.authUrl).pathname.replace(/\/$/, "");
  const stsAlias =
    authPath === ""
      ? undefined
      : (req: { url?: string | undefined }): string => {
          const url = req.url ?? "/";
          return url.startsWith(`${authPath}/sts/exchange`) ? url.slice(authPath.length) : url;
        };
  const app = Fastify({
    serverFactory: onePort.serverFactory as never,
    logger: deps.logStream
      ? { level: config.logLevel, stream: deps.logStream }
      : { level: config.logLevel },
    // Our own onResponse hook writes the one line per request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    // A URL fastify cannot even route (bad percent-encoding) still gets API.md's error body.
    frameworkErrors: createFrameworkErrorHandler(errorDomain),
    // The STS endpoint lives under the auth URL too (where discovery says it is), when the
    // auth URL has a path: one route, two addresses.
    ...(stsAlias ? { rewriteUrl: stsAlias as never } : {}),
    genReqId: (req) => requestIdOf(req.headers["x-request-id"]),
  });
  const log = (msg: string, fields: Record<string, unknown>) => app.log.error(fields, msg);
  // The audit trail's retention: events older than GATEHOUSE_EVENT_RETENTION go, in batches.
  const retention = createEventRetention({
    store,
    now,
    retentionMs: config.eventRetentionSeconds * 1000,
    log: (fields, msg) => app.log.info(fields, msg),
  });
  const stopRetention = startPeriodic(retention, pruneIntervalMs, (err) =>
    app.log.error({ err }, "event retention failed"),
  );
  app.addHook("onClose", async () => stopRetention());

  const pageTokenKey = await store.getOrCreateSecret("page-token-key", () => randomBytes(32));
  const lists = createListEngine({ key: pageTokenKey, now });

  // Access: tokens the auth URL issues for the base URL, decisions against the store.
  const keyRing = createKeyRing({ store, now });
  await keyRing.ensureKey();
  const tokens = createTokenIssuer({ keyRing, issuer: config.authUrl, now });
  const verifier = createTokenVerifier({
    keyRing,
    issuer: config.authUrl,
    audience: config.baseUrl,
    now,
  });
  const authorizer = createAuthorizer(store);
  const access = createAccessControl({
    verifier,
    authorizer,
    identityExists: (uid) => store.identityExists(uid),
    sessionActive: (sid) => store.sessionActive(sid),
    onRejectedToken: (reason, reqId) => app.log.info({ reqId, reason }, "bearer token rejected"),
    onDecision: (outcome) => metrics.authorization(outcome),
  });
  // The rate limits (docs/api.md "Rate limits"): wrapped around access control's check, so
  // that every path charges a call once its caller is known and before its body is read.
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
  // Workload and user tokens from external issuers, for the STS exchange.
  const oidc = createOidcVerifier({
    allowInsecureLoopback: config.allowInsecureLoopbackIssuers,
    now,
    onStaleKeys: (issuer, err) =>
      app.log.warn({ issuer, reason: err.reason }, "OIDC issuer unreachable; using cached keys"),
  });
  const onRefused = (fields: Record<string, unknown>) =>
    app.log.info(fields, "token exchange refused");
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

  if (config.corsOrigins.length > 0) {
    await app.register(fastifyCors, {
      origin: config.corsOrigins.includes("*") ? "*" : config.corsOrigins,
      methods: [...new Set([...connectCors.allowedMethods, "GET", "POST", "PATCH", "DELETE"])],
      allowedHeaders: [...connectCors.allowedHeaders, "Authorization", "X-Request-Id"],
      exposedHeaders: [...connectCors.exposedHeaders, "X-Request-Id", "WWW-Authenticate"],
      maxAge: 7200,
    });
  }

  // Ready when the database answers, within a second: a stalled database makes a probe fail,
  // not hang (README "Connections, stalls and shutdown").
  const ready = () =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), readyTimeoutMs);
      store
        .ping({ timeoutMs: readyTimeoutMs })
        .then(
          () => resolve(true),
          () => resolve(false),
        )
        .finally(() => clearTimeout(timer));
    });
  // v1's deprecation window: Deprecation, Sunset and Link on every v1 answer, and its calls
  // counted (docs/v1-migration.md "Deprecation").
  const v1Deprecation = createV1Deprecation({
    settings: config.v1Deprecation,
    services: serviceEntries.filter((e) => e.adapter).map((e) => e.service),
    baseUrl: config.baseUrl,
  });
  v1Deprecation.addRoutes(app);
  // Sign-in and the registry token endpoint: a bucket per client address each, before any
  // of their work (the API's calls are limited in admission: createCallLimit above).
  addRouteLimits(
    app,
    [
      { prefix: `${authPath}/oauth/`, policy: config.rateLimits.login },
      { prefix: `${authPath}/registry/token`, policy: config.rateLimits.registryToken },
    ],
    now,
  );
  await app.register(healthRoutes, { check: ready });
  await app.register(wellKnownRoutes, {
    authUrl: config.authUrl,
    keyRing,
    loginName: config.loginIssuer === "" ? "" : config.loginName,
  });
  // The registry's token service (Docker Registry v2 token authentication), when there is a
  // registry: GATEHOUSE_REGISTRY_AUDIENCE names its service.
  if (config.registryService !== "") {
    await app.register(registryTokenRoutes, {
      authUrl: config.authUrl,
      services: [config.registryService, config.registryAudience],
      // A Gatehouse token of either audience is a credential.
      verifier: createTokenVerifier({
        keyRing,
        issuer: config.authUrl,
        audience: [config.baseUrl, config.registryAudience, config.registryService],
        now,
      }),
      identityExists: (uid) => store.identityExists(uid),
      sessionActive: (sid) => store.sessionActive(sid),
      matchIdentity: createIdentityMatcher({ store, oidc, config }),
      touchIdentity: (uid) => store.touchIdentity(uid, now()),
      names: createRegistryNames(store),
      authorizer,
      signer: createRegistryTokenSigner({ keyRing, issuer: config.authUrl, now }),
      log: (fields, msg) => app.log.info(fields, msg),
      onOutcome: (outcome) => metrics.token("registry_token", outcome),
    });
  }
  // Tags follow the registry's pushes and deletes; off without a secret.
  if (config.registryNotificationsSecret !== "") {
    await app.register(registryNotificationRoutes, {
      baseUrl: config.baseUrl,
      secret: config.registryNotificationsSecret,
      names: createRegistryNames(store),
      store,
      now,
      log: (fields, msg) => app.log.warn(fields, msg),
    });
  }
  await app.register(consoleRoutes, {
    dir: deps.consoleDir ?? consoleDir(),
    onMissing: (dir) => app.log.warn({ dir }, "the web console is not built: run npm run build"),
  });
  // The REST API's OpenAPI document, from the same descriptors and http rules the gateway
  // routes by, and its rendering at /docs.
  await app.register(docsRoutes, {
    document: buildOpenApiDocument({
      services: apiServices,
      version: packageVersion(),
      serverUrl: config.baseUrl,
    }),
  });
  // People's sign-in: Gatehouse as an OAuth server for its own clients, and as an OIDC client
  // of the login provider or an organization's identity provider.
  await app.register(oauthRoutes, {
    config,
    store,
    tokens,
    verifier,
    upstream: createUpstream({
      authUrl: config.authUrl,
      allowInsecureLoopback: config.allowInsecureLoopbackIssuers,
      allowPrivateAddresses: config.allowPrivateIssuerAddresses,
      now,
      warn: (fields, msg) => app.log.warn(fields, msg),
    }),
    now,
    log: (fields, msg) => app.log.info(fields, msg),
    logError: (fields, msg) => app.log.error(fields, msg),
    onLogin: (outcome) => metrics.token("login", outcome),
    ...(deps.resolveTxt ? { resolveTxt: deps.resolveTxt } : {}),
  });
  // An organization's provider found by its name, for the console's sign-in page.
  await app.register(signInProviderRoutes, { store, authUrl: config.authUrl });
  // One set of implementations and one interceptor list, served by the Connect router
  // (gRPC, gRPC-Web, Connect) and the REST gateway alike.
  const services = createServiceImpls({
    store,
    lists,
    now,
    authorizer,
    tokens,
    oidc,
    config,
    onRefused,
    // An API token (the base URL's audience only) may be exchanged for a registry-audience one.
    apiTokens: {
      verify: (token) => verifier.verify(token),
      active: async (sub, sid) =>
        (await store.identityExists(sub)) &&
        (sid === undefined || (await store.sessionActive(sid))),
    },
    authorizeCall: access.authorizeCall,
  });
  const interceptors = [
    createErrorInterceptor(errorDomain, log),
    // Outside every refusal, so that a refused v1 call carries the headers too.
    v1Deprecation.interceptor,
    // A call whose deadline had passed on arrival is not run, even unauthenticated.
    createDeadlineGate(),
    // Before access: a call over its limit is refused as such, whatever its token.
    limits.interceptor,
    access.interceptor,
    // After access: an unauthorized caller learns nothing of what validation thinks.
    createNulGate(),
    ...(deps.auditTrail === false ? [] : [createAuditInterceptor(store)]),
    ...(deps.interceptors ?? []),
  ];
  const shutdown = new AbortController();
  // Every call in flight listens on this one signal: past ten, Node would print a (false)
  // "possible memory leak" warning to stderr. Each listener goes with its call.
  setMaxListeners(0, shutdown.signal);
  // The one unary invocation of the lean paths and REST: the call's context, deadline and
  // shutdown, the interceptors, the implementation and the API error (src/pipeline/).
  const pipeline = createUnaryPipeline({
    interceptors,
    domain: errorDomain,
    log,
    shutdownSignal: shutdown.signal,
  });
  // One line per request, and the RPC metrics, whatever path answered it.
  const requestLog = createRequestLog(v1Deprecation.counting(metrics), (fields, msg) =>
    app.log.info(fields, msg),
  );
  // Every service either server serves: the API, health, and reflection (the API's shape is
  // public: it lists the API services and the error details).
  const registrations = [
    ...services,
    registration(
      Health,
      createHealthService({
        check: ready,
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
  // Every path's request bodies share one budget, and none is read for a call that needs a
  // token and came without a valid one (issue 23).
  const budget = createRequestBudget({
    limit: config.requestBufferBytes,
    // An RPC with no rule is refused before its body is read; counted public all the same.
    isPublic: (rpc) => (ruleOf(rpc)?.kind ?? "public") === "public",
  });
  addBodyGate(app, { refusal: limits.refusal, budget, contextValues });
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
  addGrpcMessageEncoding(app, errorDomain);
  addDeadlineClamp(app);
  addGrpcWebText(app);
  addConnectJsonTimes(app, apiServices);
  // After the text-mode hook, so that it sees binary frames before they are base64-encoded.
  addGrpcWebErrorInfo(app, errorDomain);
  addUnknownRpcAnswer(app, errorDomain);
  addConnectParseErrorStatus(app, errorDomain);

  let router: ConnectRouter | undefined;
  await app.register(fastifyConnectPlugin, {
    interceptors,
    contextValues,
    // Not the plugin's shutdownTimeoutMs: its timer is never cleared, and would keep a
    // stopped process alive for the whole grace period. close() aborts calls itself.
    shutdownSignal: shutdown.signal,
    // API.md "Limits": 1 MiB a message on every protocol, after decompression. The library's
    // default is ~4 GiB; this bound also caps what a compressed message may inflate to.
    readMaxBytes: bodyLimit,
    // One rule for every JSON protocol, as REST has it: an unknown field is INVALID_ARGUMENT.
    jsonOptions: { ignoreUnknownFields: false },
    routes(r) {
      router = r;
      registerServices(r, registrations);
    },
  });
  if (!router) throw new Error("connect routes were not registered");
  // Fail closed: every RPC the router serves (the REST gateway serves the same ones) must
  // have an authorization rule, or the server does not start.
  const served = router.handlers.map((h) => h.method);
  access.guard(served);
  // Unary binary gRPC on HTTP/2 skips fastify and connect-node's pipeline: the same
  // implementations and interceptors, answered straight from the stream (src/grpc/unary-grpc.ts).
  if (config.leanPaths) {
    onePort.takeStreams(
      createUnaryGrpc({
        registrations,
        pipeline,
        readMaxBytes: bodyLimit,
        domain: errorDomain,
        refusal: limits.refusal,
        budget,
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
  let metricsPort: number | undefined;
  const metricsListener: MetricsListener | undefined = metrics.registry
    ? createMetricsListener(metrics.registry, (err) =>
        app.log.error({ err }, "metrics collection failed"),
      )
    : undefined;
  // After CORS and Connect: its catch-all leaves their exact routes alone.
  await app.register(restGateway, {
    services,
    pipeline,
    contextValues,
    domain: errorDomain,
    log,
    bodyLimit,
    refusal: limits.refusal,
    budget,
    // The token endpoint also takes a posted form, as OAuth-style clients send one.
    formBodies: [`${SecurityTokenService.typeName}/${SecurityTokenService.method.exchange.name}`],
    // A person typing the server's address gets the console, not a JSON 404.
    onNoRoute: browserToConsole,
  });

  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });
  app.addHook("onResponse", async (req, reply) => {
    const info = callInfoOf(req);
    const protocol = protocolOf(req);
    requestLog({
      reqId: req.id,
      rpc: info?.rpc,
      route: `${req.method} ${req.routeOptions.url ?? req.url.split("?")[0]}`,
      protocol,
      status: reply.statusCode,
      code: info?.code,
      durationMs: reply.elapsedTime,
      // Every call of the RPC layer (the Connect router, the lean Connect path, the REST
      // gateway, whose unknown routes included) and every RPC-protocol request (unknown
      // RPCs): not the console's files or health checks.
      counted: info !== undefined || protocol !== "rest",
    });
  });

  // The webhook outbox's deliverer: started with the listener, off every request path.
  const webhooks = createWebhookDelivery({
    config,
    store,
    now,
    registry: metrics.registry,
    log: (fields, msg) => app.log.warn(fields, msg),
  });

  await app.ready();
  return {
    app,
    tokens,
    keyRing,
    authorizer,
    served,
    metrics,
    async listen() {
      const address = await onePort.listen(config.host, config.port);
      webhooks.start();
      if (metricsListener && config.metricsPort !== undefined) {
        metricsPort = await metricsListener.listen(config.metricsHost, config.metricsPort);
      }
      return address;
    },
    get metricsPort() {
      return metricsPort;
    },
    async close() {
      // Calls still running when the grace period ends are aborted, as their connections are.
      const cutOff = setTimeout(() => shutdown.abort(), config.shutdownTimeoutMs);
      try {
        await Promise.all([
          onePort.close(config.shutdownTimeoutMs),
          metricsListener?.close(),
          // Before the caller closes the store: attempts in flight record their outcome.
          webhooks.stop(),
        ]);
        await app.close();
      } finally {
        clearTimeout(cutOff);
      }
    },
  };
}

/** Tell the protocol of a request from its content type, for the request log. */
function protocolOf(req: FastifyRequest): Protocol {
  const ct = req.headers["content-type"] ?? "";
  if (ct.startsWith("application/grpc-web")) return "grpc-web";
  if (ct.startsWith("application/grpc")) return "grpc";
  if (req.headers["connect-protocol-version"] || ct.startsWith("application/connect")) {
    return "connect";
  }
  // No REST route has an RPC's path: a call there without Connect's header is still Connect.
  const q = req.url.indexOf("?");
  return rpcPath.test(q < 0 ? req.url : req.url.slice(0, q)) ? "connect" : "rest";
}
