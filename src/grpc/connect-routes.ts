import type { JsonValue } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
  createConnectRouter,
} from "@connectrpc/connect";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { FastifyPluginCallback, FastifyRequest } from "fastify";
import { routerCompressions, routerContentTypes } from "../pipeline/connect-protocol.js";

/** Options of connectRoutes: the router's, and how a request gives its context values. */
export interface ConnectRoutesOptions extends ConnectRouterOptions {
  /** Register the services on the router. */
  routes: (router: ConnectRouter) => void;
  contextValues: (req: FastifyRequest) => ContextValues;
  /**
   * Filled as the routes are registered: each RPC's path and the HTTP methods it answers
   * (POST, and GET for Connect's side-effect-free methods). Another method on such a path is
   * refused by the unknown-RPC answer (src/grpc/unknown-rpc.ts).
   */
  served: Map<string, readonly string[]>;
}

/**
 * connect-fastify's plugin, but each RPC's path is registered for the HTTP methods its handler
 * answers, where the library registers it for all nine of fastify's (`instance.all`): 131
 * paths took 1,179 routes, and building them was about a third of every server start (the
 * test suites start servers hundreds of times a run). The handler is the library's: the
 * request and the answer go through connect-node's universal request and response, and the
 * router reads the body itself (a parser that reads nothing for each of its content types).
 */
export const connectRoutes: FastifyPluginCallback<ConnectRoutesOptions> = (app, opts, done) => {
  const { routes, contextValues, served, ...routerOptions } = opts;
  const router = createConnectRouter({ acceptCompression: routerCompressions, ...routerOptions });
  routes(router);
  const noBody = (_req: unknown, _body: unknown, parsed: (e: null, b: undefined) => void) =>
    parsed(null, undefined);
  app.addContentTypeParser(routerContentTypes.names, noBody);
  for (const pattern of routerContentTypes.patterns) app.addContentTypeParser(pattern, noBody);
  for (const handler of router.handlers) {
    served.set(handler.requestPath, handler.allowedMethods);
    app.route({
      method: handler.allowedMethods,
      url: handler.requestPath,
      // HEAD is not GET here: connect answers neither HEAD nor any method but these.
      exposeHeadRoute: false,
      handler: async (req, reply) => {
        try {
          const answer = await handler(
            universalRequestFromNodeRequest(
              req.raw,
              reply.raw,
              req.body as JsonValue | undefined,
              contextValues(req),
            ),
          );
          // Headers set on the reply (hooks) go out with the router's own answer.
          for (const [key, value] of Object.entries(reply.getHeaders())) {
            if (value !== undefined) reply.raw.setHeader(key, value);
          }
          await universalResponseToNodeResponse(answer, reply.raw);
        } catch (e) {
          if (ConnectError.from(e).code === Code.Aborted) return;
          reply.log.error(
            { err: e, rpc: `${handler.service.typeName}/${handler.method.name}` },
            "rpc handler failed",
          );
        }
      },
    });
  }
  done();
};
