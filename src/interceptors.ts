import type { Interceptor } from "@connectrpc/connect";
import { kCallInfo } from "./call-info.js";
import { type ErrorLogger, toApiError } from "./errors.js";

/**
 * Create the outermost interceptor: it records the RPC and its outcome for the request log,
 * and turns whatever a handler throws into the API error the caller sees (ErrorInfo first,
 * store errors mapped, unexpected ones logged and hidden behind INTERNAL).
 */
export function createErrorInterceptor(domain: string, log: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    const info = req.contextValues.get(kCallInfo);
    if (info) info.rpc = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (info) info.code = 0;
      return res;
    } catch (err) {
      const apiError = toApiError(err, domain, (msg, fields) =>
        log(msg, { ...fields, rpc: `${req.service.typeName}/${req.method.name}` }),
      );
      if (info) info.code = apiError.code;
      throw apiError;
    }
  };
}
