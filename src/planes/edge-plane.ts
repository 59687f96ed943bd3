import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, cors as connectCors } from "@connectrpc/connect";
import fastifyCors from "@fastify/cors";
import Fastify, { type FastifyInstance, LogController } from "fastify";
import type { Config } from "../config.js";
import { toApiError } from "../errors.js";
import { createOnePort, type OnePort, type Timeouts } from "../one-port.js";
import { requestIdOf } from "../pipeline/request-log.js";
import { toRestErrorBody } from "../rest/error-body.js";
import { createFrameworkErrorHandler } from "../rest/error-reply.js";
import type { Plane } from "./planes.js";

/** What the edge plane is built from. */
export interface EdgeDeps {
  config: Config;
  logStream?: { write(line: string): void } | undefined;
  timeouts?: Partial<Timeouts> | undefined;
}

/** EdgePlane is the one port, the fastify app behind it, and the shutdown of calls. */
export interface EdgePlane extends Plane {
  app: FastifyInstance;
  onePort: OnePort;
  /** ErrorInfo.domain of every error, whatever the protocol: `iam.<domain>`. */
  errorDomain: string;
  /** Aborted when close()'s grace period ends: every call still running listens on it. */
  shutdownSignal: AbortSignal;
  /** Where the port listens, once it does. */
  readonly address: AddressInfo | undefined;
}

/** API.md "Limits": request bodies at most 1 MiB, on every protocol. */
export const bodyLimit = 1024 * 1024;

/**
 * Open the edge: the one port (TLS, connection limits), the fastify app on it, and CORS ahead
 * of every route and hook. Opened first and closed last: close() waits for the port's calls.
 */
export async function openEdgePlane({ config, logStream, timeouts }: EdgeDeps): Promise<EdgePlane> {
  const errorDomain = `iam.${config.domain}`;
  const tls = config.tlsCertPath
    ? { cert: readFileSync(config.tlsCertPath), key: readFileSync(config.tlsKeyPath) }
    : undefined;
  const onePort = createOnePort(tls, {
    ...(timeouts ? { timeouts } : {}),
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
    logger: logStream ? { level: config.logLevel, stream: logStream } : { level: config.logLevel },
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
  if (config.corsOrigins.length > 0) {
    await app.register(fastifyCors, {
      origin: config.corsOrigins.includes("*") ? "*" : config.corsOrigins,
      methods: [...new Set([...connectCors.allowedMethods, "GET", "POST", "PATCH", "DELETE"])],
      allowedHeaders: [...connectCors.allowedHeaders, "Authorization", "X-Request-Id"],
      exposedHeaders: [...connectCors.exposedHeaders, "X-Request-Id", "WWW-Authenticate"],
      maxAge: 7200,
    });
  }
  const shutdown = new AbortController();
  // Every call in flight listens on this one signal: past ten, Node would print a (false)
  // "possible memory leak" warning to stderr. Each listener goes with its call.
  setMaxListeners(0, shutdown.signal);
  let cutOff: NodeJS.Timeout | undefined;
  let address: AddressInfo | undefined;
  return {
    app,
    onePort,
    errorDomain,
    shutdownSignal: shutdown.signal,
    get address() {
      return address;
    },
    async listen() {
      address = await onePort.listen(config.host, config.port);
    },
    async stop() {
      // Calls still running when the grace period ends are aborted, as their connections are.
      cutOff = setTimeout(() => shutdown.abort(), config.shutdownTimeoutMs);
      await onePort.close(config.shutdownTimeoutMs);
    },
    async close() {
      try {
        await app.close();
      } finally {
        clearTimeout(cutOff);
      }
    },
  };
}
