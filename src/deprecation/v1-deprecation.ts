import { readFileSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { Counter, type Registry } from "prom-client";
import type { Metrics } from "../metrics/metrics.js";
import type { V1DeprecationSettings } from "./v1-settings.js";

/** Where the server serves the migration guide (docs/v1-migration.md). */
export const migrationGuidePath = "/docs/v1-migration.md";

/** What v1's deprecation is built from. */
export interface V1DeprecationDeps {
  readonly settings: V1DeprecationSettings;
  /** The v1 services (the service table's adapters). */
  readonly services: readonly DescService[];
  /** The server's base URL: the default guide is served under it. */
  readonly baseUrl: string;
}

/** v1's deprecation window on every answer, and the count of v1 calls. */
export interface V1Deprecation {
  /** The response fields of every v1 answer: `Deprecation`, `Sunset` if set, and `Link`. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The interceptor that puts them on every v1 answer of the RPC paths, as response headers
   * (gRPC: metadata; an error carries them as its own metadata). Outermost but for the error
   * interceptor, so that refusals (a token, a limit) carry them too.
   */
  readonly interceptor: Interceptor;
  /**
   * Add the headers to every REST answer under a v1 prefix (`/iam/v1/`, `/registry/v1/`,
   * `/vulnerabilities/v1/`), set before anything answers (refusals included), and serve the
   * migration guide at migrationGuidePath when the settings leave the link to this server.
   */
  addRoutes(app: FastifyInstance): void;
  /**
   * The server's metrics, also counting every v1 call (`gatehouse_v1_calls_total` by service
   * and method; its series are made at start) as the request log records it.
   */
  counting(metrics: Metrics): Metrics;
}

/** Format epoch milliseconds as an RFC 9110 IMF-fixdate (Sunset, RFC 8594). */
function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Create v1's deprecation window. */
export function createV1Deprecation(deps: V1DeprecationDeps): V1Deprecation {
  const { settings } = deps;
  const url = settings.migrationUrl || `${deps.baseUrl.replace(/\/$/, "")}${migrationGuidePath}`;
  const links = [`<${url}>; rel="deprecation"; type="text/markdown"`];
  const headers: Record<string, string> = {
    // RFC 9745: an sf-date, `@` and the epoch seconds.
    deprecation: `@${Math.floor(settings.deprecatedAt / 1000)}`,
  };
  if (settings.sunsetAt !== undefined) {
    headers.sunset = httpDate(settings.sunsetAt);
    links.push(`<${url}>; rel="sunset"; type="text/markdown"`);
  }
  headers.link = links.join(", ");
  const entries = Object.entries(headers);
  const v1 = new Set(deps.services.map((s) => s.typeName));
  const prefixes = [
    ...new Set(
      deps.services.map((s) => {
        // `gatehouse.iam.v1.GroupsService`: REST serves it under `/iam/v1/`.
        const parts = s.typeName.split(".");
        return `/${parts[1]}/${parts[2]}/`;
      }),
    ),
  ];

  // Not async for the other calls: a v2 call pays a set lookup, not a promise.
  const interceptor: Interceptor = (next) => {
    const marked = async (req: Parameters<typeof next>[0]) => {
      try {
        const res = await next(req);
        for (const [k, v] of entries) res.header.set(k, v);
        return res;
      } catch (err) {
        // Anything else is an unexpected error, shaped (and logged) by the error interceptor.
        // A copy: an error object may be shared between calls.
        if (!(err instanceof ConnectError)) throw err;
        const metadata = new Headers(err.metadata);
        for (const [k, v] of entries) metadata.set(k, v);
        const copy = new ConnectError(err.rawMessage, err.code, metadata, undefined, err.cause);
        copy.details = err.details;
        throw copy;
      }
    };
    return (req) => (v1.has(req.service.typeName) ? marked(req) : next(req));
  };

  const addRoutes = (app: FastifyInstance) => {
    // A callback hook, not an async one: every request passes it, and most are not v1.
    app.addHook("onRequest", (req, reply, done) => {
      const url = req.url;
      for (const p of prefixes) {
        if (url.startsWith(p)) {
          for (const [k, v] of entries) reply.header(k, v);
          break;
        }
      }
      done();
    });
    if (settings.migrationUrl !== "") return;
    const guide = readGuide();
    app.get(migrationGuidePath, async (_req, reply) =>
      reply.header("content-type", "text/markdown; charset=utf-8").send(guide),
    );
  };

  const counting = (metrics: Metrics): Metrics => {
    if (!metrics.registry) return metrics;
    const cells = v1CallCounter(metrics.registry, deps.services);
    return {
      ...metrics,
      rpc(rpc, protocol, code, seconds) {
        metrics.rpc(rpc, protocol, code, seconds);
        if (rpc !== undefined) cells.get(rpc)?.inc();
      },
    };
  };

  return { headers, interceptor, addRoutes, counting };
}

/** The counter of v1 calls, one series per v1 method, bound at start. */
function v1CallCounter(
  registry: Registry,
  services: readonly DescService[],
): Map<string, Counter.Internal> {
  const counter = new Counter({
    name: "gatehouse_v1_calls_total",
    help: "Calls to the deprecated v1 API, by service and method, whatever their outcome (docs/v1-migration.md).",
    labelNames: ["service", "method"] as const,
    registers: [registry],
  });
  const cells = new Map<string, Counter.Internal>();
  for (const s of services) {
    for (const m of s.methods) {
      const cell = counter.labels(s.typeName, m.name);
      cells.set(`${s.typeName}/${m.name}`, cell);
    }
  }
  return cells;
}

/**
 * The migration guide: docs/v1-migration.md of the repository (src/deprecation/ -> ../../docs)
 * or of the image (dist/src/deprecation/ -> ../../../docs; the Dockerfile copies it there).
 */
function readGuide(): string {
  for (const rel of ["../../docs/v1-migration.md", "../../../docs/v1-migration.md"]) {
    try {
      return readFileSync(new URL(rel, import.meta.url), "utf8");
    } catch {
      // Not here: the other layout.
    }
  }
  throw new Error(
    "docs/v1-migration.md was not found beside the server: set GATEHOUSE_V1_MIGRATION_URL",
  );
}
