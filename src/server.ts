import type { AddressInfo } from "node:net";
import type { DescMethod } from "@bufbuild/protobuf";
import type { FastifyInstance } from "fastify";
import type { Authorizer } from "./auth/authorizer.js";
import type { KeyRing } from "./auth/keyring.js";
import type { TokenIssuer } from "./auth/tokens.js";
import type { Metrics } from "./metrics/metrics.js";
import { createPlanes, openPlanes } from "./planes/planes.js";
import { type ServerDeps, type ServerPlanes, serverPlanes } from "./planes/server-planes.js";

export type { ServerDeps } from "./planes/server-planes.js";

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
 * Build the server: one fastify app serving every protocol, not yet listening. Its planes
 * (src/planes/server-planes.ts) open in their list's order, each from the parts of those it
 * names; listen() starts them in that order, close() stops them all and closes them in
 * reverse (src/planes/planes.ts). A plane that fails to open closes those already open, and
 * the error stands: the server fails closed.
 */
export async function createServer(deps: ServerDeps): Promise<Server> {
  const opened: Partial<ServerPlanes> = {};
  // The planes' own lines ("plane opened", …) go to the app's log once the edge has made it.
  const planes = createPlanes((fields, msg) => opened.edge?.app.log.debug(fields, msg));
  try {
    const input = { ...deps, now: deps.now ?? Date.now };
    const { edge, metrics, auth, rpc } = await openPlanes(planes, serverPlanes, input, opened);
    await edge.app.ready();
    return {
      app: edge.app,
      tokens: auth.tokens,
      keyRing: auth.keyRing,
      authorizer: auth.authorizer,
      served: rpc.served,
      metrics: metrics.metrics,
      async listen() {
        await planes.listen();
        return edge.address as AddressInfo;
      },
      get metricsPort() {
        return metrics.port;
      },
      close: () => planes.close(),
    };
  } catch (err) {
    // What opened is undone; the reason it did not start is what the caller hears.
    await planes.close().catch(() => undefined);
    throw err;
  }
}
