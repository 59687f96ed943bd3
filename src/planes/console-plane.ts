import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import { consoleDir, consoleRoutes } from "../console-routes.js";
import { docsRoutes, packageVersion } from "../openapi/docs-routes.js";
import { buildOpenApiDocument } from "../openapi/openapi-document.js";
import { apiServices } from "../service-table.js";
import type { Plane } from "./planes.js";

/**
 * Open what people read in a browser: the web console's files, and the REST API's OpenAPI
 * document (from the same descriptors and http rules the gateway routes by) with its
 * rendering at /docs.
 */
export async function openConsolePlane(deps: {
  config: Pick<Config, "baseUrl">;
  app: FastifyInstance;
  /** The built web console (default: dist/console of the package). */
  dir?: string | undefined;
}): Promise<Plane> {
  const { app } = deps;
  await app.register(consoleRoutes, {
    dir: deps.dir ?? consoleDir(),
    onMissing: (dir) => app.log.warn({ dir }, "the web console is not built: run npm run build"),
  });
  await app.register(docsRoutes, {
    document: buildOpenApiDocument({
      services: apiServices,
      version: packageVersion(),
      serverUrl: deps.config.baseUrl,
    }),
  });
  return {};
}
