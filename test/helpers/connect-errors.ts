import { ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
} from "../../gen/google/rpc/error_details_pb.js";

// What a connect-es client's tests read of an error, and send with a call, whatever transport
// carries it (a socket, or helpers/in-memory.ts's router transport): nothing here dials.

/** An error, normalized across protocols. */
export interface ApiErr {
  code: number;
  message: string;
  reason: string;
  domain: string;
  fields: string[];
  preconditions: string[];
}

/** Normalize a connect-es client's error (any transport). */
export function connectErr(e: unknown): ApiErr {
  const ce = ConnectError.from(e);
  const info = ce.findDetails(ErrorInfoSchema);
  return {
    code: ce.code,
    message: ce.rawMessage,
    reason: info[0]?.reason ?? "",
    domain: info[0]?.domain ?? "",
    fields: ce.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => v.field)),
    preconditions: ce
      .findDetails(PreconditionFailureSchema)
      .flatMap((p) => p.violations.map((v) => v.type)),
  };
}

/** An interceptor that sends `headers` (e.g. the bearer token) on every call. */
export function withHeaders(headers: Record<string, string>): Interceptor {
  return (next) => (req) => {
    for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
    return next(req);
  };
}

/** Run `p` and return its normalized error; fail if it succeeds. */
export async function failure(p: Promise<unknown>): Promise<ApiErr> {
  try {
    await p;
  } catch (e) {
    return connectErr(e);
  }
  throw new Error("expected the call to fail");
}

/** The gRPC code of `p`'s outcome: 0 if it succeeds. */
export async function outcome(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 0;
  } catch (e) {
    return connectErr(e).code;
  }
}
