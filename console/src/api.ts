import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type Interceptor,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  isNot,
  type ServiceName,
  type ServiceTable,
  serviceEntries,
} from "../../src/service-table.js";
import { currentToken } from "./session.js";

// Every call carries the signed-in person's token (refreshed first when it is about to expire).
const bearer: Interceptor = (next) => async (req) => {
  const token = await currentToken();
  if (token) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [bearer] });

/** The console's clients: one per service of the table that names its key (`console`). */
export type Api = {
  [N in ServiceName as ServiceTable[N]["console"] extends string
    ? ServiceTable[N]["console"]
    : never]: Client<ServiceTable[N]["service"]>;
};

/** The API, through connect-web and the generated service descriptors only. */
export const api = Object.fromEntries(
  serviceEntries.flatMap((e) =>
    isNot(e.console) ? [] : [[e.console, createClient(e.service, transport)]],
  ),
) as Api;

/** An API error as the console shows it: the status message, and violations by field. */
export interface Problem {
  code: string;
  message: string;
  /** BadRequest field violations, keyed by the field's last path segment (`name`). */
  fields: Record<string, string>;
  /** Every BadRequest field violation, with the field's full path. */
  violations: { field: string; description: string }[];
}

/** Turn whatever a call threw into a Problem (google.rpc.Status details included). */
export function problemOf(err: unknown): Problem {
  const e = ConnectError.from(err);
  const fields: Record<string, string> = {};
  const violations: Problem["violations"] = [];
  for (const bad of e.findDetails(BadRequestSchema)) {
    for (const v of bad.fieldViolations) {
      const key = v.field.split(".").pop() ?? v.field;
      fields[key] = fields[key] ? `${fields[key]}; ${v.description}` : v.description;
      violations.push({ field: v.field, description: v.description });
    }
  }
  let message = e.rawMessage;
  if (e.code === Code.PermissionDenied) {
    const capability = /lacks (\S+)/.exec(message)?.[1];
    if (capability)
      message = `You do not hold the capability ${capability} here (or it does not exist). ${message}`;
  }
  return { code: Code[e.code] ?? String(e.code), message, fields, violations };
}
