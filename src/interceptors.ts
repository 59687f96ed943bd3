import type { Interceptor } from "@connectrpc/connect";
import { kCallInfo } from "./call-info.js";
import { type ErrorLogger, toApiError } from "./errors.js";

/**
 * Create the outermost interceptor: it records the RPC and its outcome for the request log,
 * and turns whatever a handler throws into the API error the caller sees (ErrorInfo first,
 * store errors mapped, unexpected ones logged and hidden behind INTERNAL), a server stream's
 * messages included (an error while they are read ends the stream with the API error).
 */
export function createErrorInterceptor(domain: string, log: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    const info = req.contextValues.get(kCallInfo);
    const rpc = `${req.service.typeName}/${req.method.name}`;
    if (info) info.rpc = rpc;
    const shape = (err: unknown) => {
      const apiError = toApiError(err, domain, (msg, fields) => log(msg, { ...fields, rpc }));
      if (info) info.code = apiError.code;
      return apiError;
    };
    try {
      const res = await next(req);
      if (info) info.code = 0;
      if (!res.stream) return res;
      // A server stream's handler runs as its messages are read, after this returned.
      const messages = res.message;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* messages;
          } catch (err) {
            throw shape(err);
          }
        })(),
      };
    } catch (err) {
      throw shape(err);
    }
  };
}
