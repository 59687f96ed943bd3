import type { AddressInfo } from "node:net";
import type { DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { Authorizer } from "./auth/authorizer.js";
import type { KeyRing } from "./auth/keyring.js";
import type { TokenIssuer } from "./auth/tokens.js";
import type { Config } from "./config.js";
import type { Metrics } from "./metrics/metrics.js";
import type { Timeouts } from "./one-port.js";
import type { AdmissionCheck } from "./pipeline/admission.js";
import { openAuthPlane } from "./planes/auth-plane.js";
import { openConsolePlane } from "./planes/console-plane.js";
import { openEdgePlane } from "./planes/edge-plane.js";
import { openEventsPlane } from "./planes/events-plane.js";
import { openExpiryPlane } from "./planes/expiry-plane.js";
import { openHealthPlane } from "./planes/health-plane.js";
import { openMetricsPlane } from "./planes/metrics-plane.js";
import { createPlanes } from "./planes/planes.js";
import { openRegistryPlane } from "./planes/registry-plane.js";
import { openRpcPlane } from "./planes/rpc-plane.js";
import { openScimPlane } from "./planes/scim-plane.js";
import { addRouteLimits } from "./rate-limit/route-limits.js";
import type { Store } from "./store/store.js";

/** What a server is built from; tests pass their own store and clock. */
export interface ServerDeps {
  config: Config;
  store: Store;
  now?: () => number;
  /** Where log lines go (default: stdout); tests capture them here. */
  logStream?: { write(line: string): void };
  /** Interceptors that run after the error and access interceptors, before the handler. */
  interceptors?: Interceptor[];
  /** Admission checks after the token check, before any body is read (src/pipeline/admission.ts). */
  admissionChecks?: AdmissionCheck[];
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

/**
 * Build the server: one fastify app serving every protocol, not yet listening. Its planes open
 * in the order below, each from the parts of those before it; listen() starts them in that
 * order, close() stops them all and closes them in reverse (src/planes/planes.ts). A plane
 * that fails to open closes those already open, and the error stands: the server fails closed.
 */
export async function createServer(deps: ServerDeps): Promise<Server> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  // The planes' own lines ("plane opened", …) go to the app's log once the edge has made it.
  let logger: FastifyBaseLogger | undefined;
  const planes = createPlanes((fields, msg) => logger?.debug(fields, msg));
  try {
    // The port and the app on it, CORS before any route: first opened, last closed.
    const edge = await planes.open("edge", async () => {
      const opened = await openEdgePlane(deps);
      logger = opened.app.log;
      return opened;
    });
    const { app } = edge;
    // Before every plane that records or reads the store: they take its timed store.
    const metricsPlane = await planes.open("metrics", () =>
      openMetricsPlane({ config, store: deps.store, log: app.log }),
    );
    const { metrics, store } = metricsPlane;
    const events = await planes.open("events", () =>
      openEventsPlane({
        config,
        store,
        now,
        registry: metrics.registry,
        log: app.log,
        auditTrail: deps.auditTrail !== false,
      }),
    );
    // Sign-in and the registry token endpoint: a bucket per client address each, ahead of
    // every route of theirs (the API's calls are limited in admission: the rpc plane).
    const authPath = new URL(config.authUrl).pathname.replace(/\/$/, "");
    addRouteLimits(
      app,
      [
        { prefix: `${authPath}/oauth/`, policy: config.rateLimits.login },
        { prefix: `${authPath}/registry/token`, policy: config.rateLimits.registryToken },
      ],
      now,
    );
    await planes.open("expiry", () => openExpiryPlane({ store, now, log: app.log }));
    const health = await planes.open("health", () => openHealthPlane({ store, app }));
    const auth = await planes.open("auth", () =>
      openAuthPlane({ config, store, now, app, metrics, resolveTxt: deps.resolveTxt }),
    );
    await planes.open("registry", () =>
      openRegistryPlane({ config, store, now, app, metrics, auth }),
    );
    // SCIM provisioning: an organization's own token, never an API token (src/scim/).
    await planes.open("scim", () => openScimPlane({ config, store, now, app }));
    await planes.open("console", () => openConsolePlane({ config, app, dir: deps.consoleDir }));
    // Last of the routes: the REST gateway's catch-all leaves every exact route above alone,
    // and its hooks (admission, the request log) wrap whatever the planes above serve.
    const rpc = await planes.open("rpc", () =>
      openRpcPlane({
        config,
        store,
        now,
        metrics,
        edge,
        auth,
        health,
        interceptors: [...events.interceptors, ...(deps.interceptors ?? [])],
        admissionChecks: deps.admissionChecks ?? [],
      }),
    );
    await app.ready();
    return {
      app,
      tokens: auth.tokens,
      keyRing: auth.keyRing,
      authorizer: auth.authorizer,
      served: rpc.served,
      metrics,
      async listen() {
        await planes.listen();
        return edge.address as AddressInfo;
      },
      get metricsPort() {
        return metricsPlane.port;
      },
      close: () => planes.close(),
    };
  } catch (err) {
    // What opened is undone; the reason it did not start is what the caller hears.
    await planes.close().catch(() => undefined);
    throw err;
  }
}
