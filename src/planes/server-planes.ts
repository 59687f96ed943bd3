import type { Interceptor } from "@connectrpc/connect";
import type { Config } from "../config.js";
import type { Timeouts } from "../one-port.js";
import type { AdmissionCheck } from "../pipeline/admission.js";
import { addRouteLimits } from "../rate-limit/route-limits.js";
import type { Store } from "../store/store.js";
import { type AuthPlane, openAuthPlane } from "./auth-plane.js";
import { openConsolePlane } from "./console-plane.js";
import { type EdgePlane, openEdgePlane } from "./edge-plane.js";
import { type EventsPlane, openEventsPlane } from "./events-plane.js";
import { openExpiryPlane } from "./expiry-plane.js";
import { type HealthPlane, openHealthPlane } from "./health-plane.js";
import { type MetricsPlane, openMetricsPlane } from "./metrics-plane.js";
import type { Plane, PlaneSpec } from "./planes.js";
import { openRegistryPlane } from "./registry-plane.js";
import { openRpcPlane, type RpcPlane } from "./rpc-plane.js";
import { openScimPlane } from "./scim-plane.js";

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

/** What each plane is built from: the server's deps, with its clock settled. */
export type PlaneInput = ServerDeps & { now: () => number };

/** The parts of each of the server's planes once it is open, by name. */
export interface ServerPlanes {
  edge: EdgePlane;
  metrics: MetricsPlane;
  events: EventsPlane;
  limits: Plane;
  expiry: Plane;
  health: HealthPlane;
  auth: AuthPlane;
  registry: Plane;
  scim: Plane;
  console: Plane;
  rpc: RpcPlane;
}

/** One plane of the server: what it needs (those planes' parts only) and how it opens. */
function plane<N extends keyof ServerPlanes, D extends keyof ServerPlanes>(
  spec: PlaneSpec<ServerPlanes, PlaneInput, N, D>,
): PlaneSpec<ServerPlanes, PlaneInput, N, D> {
  return spec;
}

/**
 * The server's planes, in the order they open (top down) and close (bottom up). Each names the
 * planes whose parts it takes, and openPlanes refuses a list where one of those opens after it;
 * where the order matters for another reason (a fastify hook or route that must come first),
 * the plane says why.
 */
export const serverPlanes = [
  // The port and the app on it, CORS before any route: first opened, last closed.
  plane({ name: "edge", needs: [], open: (deps) => openEdgePlane(deps) }),
  // Before every plane that records or reads the store: they take its timed store.
  plane({
    name: "metrics",
    needs: ["edge"],
    open: ({ config, store }, { edge }) => openMetricsPlane({ config, store, log: edge.app.log }),
  }),
  plane({
    name: "events",
    needs: ["edge", "metrics"],
    open: ({ config, now, auditTrail }, { edge, metrics }) =>
      openEventsPlane({
        config,
        store: metrics.store,
        now,
        registry: metrics.metrics.registry,
        log: edge.app.log,
        auditTrail: auditTrail !== false,
      }),
  }),
  // Sign-in and the registry token endpoint: a bucket per client address each, a hook ahead of
  // every route of theirs (the auth and registry planes'; the API's calls are limited in
  // admission: the rpc plane).
  plane({
    name: "limits",
    needs: ["edge"],
    open: ({ config, now }, { edge }) => {
      const authPath = new URL(config.authUrl).pathname.replace(/\/$/, "");
      addRouteLimits(
        edge.app,
        [
          { prefix: `${authPath}/oauth/`, policy: config.rateLimits.login },
          { prefix: `${authPath}/registry/token`, policy: config.rateLimits.registryToken },
        ],
        now,
      );
      return {};
    },
  }),
  plane({
    name: "expiry",
    needs: ["edge", "metrics"],
    open: ({ now }, { edge, metrics }) =>
      openExpiryPlane({ store: metrics.store, now, log: edge.app.log }),
  }),
  plane({
    name: "health",
    needs: ["edge", "metrics"],
    open: (_, { edge, metrics }) => openHealthPlane({ store: metrics.store, app: edge.app }),
  }),
  plane({
    name: "auth",
    needs: ["edge", "metrics", "limits"],
    open: ({ config, now, resolveTxt }, { edge, metrics }) =>
      openAuthPlane({
        config,
        store: metrics.store,
        now,
        app: edge.app,
        metrics: metrics.metrics,
        resolveTxt,
      }),
  }),
  plane({
    name: "registry",
    needs: ["edge", "metrics", "limits", "auth"],
    open: ({ config, now }, { edge, metrics, auth }) =>
      openRegistryPlane({
        config,
        store: metrics.store,
        now,
        app: edge.app,
        metrics: metrics.metrics,
        auth,
      }),
  }),
  // SCIM provisioning: an organization's own token, never an API token (src/scim/).
  plane({
    name: "scim",
    needs: ["edge", "metrics"],
    open: ({ config, now }, { edge, metrics }) =>
      openScimPlane({ config, store: metrics.store, now, app: edge.app }),
  }),
  plane({
    name: "console",
    needs: ["edge"],
    open: ({ config, consoleDir }, { edge }) =>
      openConsolePlane({ config, app: edge.app, dir: consoleDir }),
  }),
  // Last of the routes (it needs every plane that serves one): the REST gateway's catch-all
  // leaves each exact route above alone, and its hooks (admission, the request log) wrap
  // whatever the planes above serve.
  plane({
    name: "rpc",
    needs: ["edge", "metrics", "events", "health", "auth", "registry", "scim", "console"],
    open: (deps, { edge, metrics, events, health, auth }) =>
      openRpcPlane({
        config: deps.config,
        store: metrics.store,
        now: deps.now,
        metrics: metrics.metrics,
        edge,
        auth,
        health,
        interceptors: [...events.interceptors, ...(deps.interceptors ?? [])],
        admissionChecks: deps.admissionChecks ?? [],
      }),
  }),
];
