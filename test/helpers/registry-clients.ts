import { type Client, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import {
  BadRequestSchema,
  PreconditionFailureSchema,
} from "../../gen/google/rpc/error_details_pb.js";

/** The protocols the registry suites run over, both through connect-node. */
export const protocols = ["connect", "grpc"] as const;
export type Protocol = (typeof protocols)[number];

/** Clients of the registry, advisory and groups services over one protocol. */
export interface RegistryClients {
  groups: Client<typeof GroupsService>;
  repos: Client<typeof ReposService>;
  tags: Client<typeof TagsService>;
  advisories: Client<typeof AdvisoriesService>;
}

/**
 * Build the clients of a server over `protocol`; with `token`, every call carries
 * `Authorization: Bearer <token>`.
 */
export function registryClients(baseUrl: string, protocol: Protocol, token?: string) {
  const interceptors: Interceptor[] = token
    ? [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ]
    : [];
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors })
      : createGrpcTransport({ baseUrl, interceptors });
  return {
    groups: createClient(GroupsService, transport),
    repos: createClient(ReposService, transport),
    tags: createClient(TagsService, transport),
    advisories: createClient(AdvisoriesService, transport),
  } satisfies RegistryClients;
}

/** A failed call, normalized: code, message, BadRequest fields and precondition types. */
export interface CallFailure {
  code: number;
  message: string;
  fields: string[];
  preconditions: string[];
}

/** Await a call that must fail and return its normalized error. */
export async function failure(call: Promise<unknown>): Promise<CallFailure> {
  try {
    await call;
  } catch (e) {
    const ce = ConnectError.from(e);
    return {
      code: ce.code,
      message: ce.rawMessage,
      fields: ce
        .findDetails(BadRequestSchema)
        .flatMap((b) => b.fieldViolations.map((v) => v.field)),
      preconditions: ce
        .findDetails(PreconditionFailureSchema)
        .flatMap((p) => p.violations.map((v) => v.type)),
    };
  }
  throw new Error("expected the call to fail");
}

// Socket-free, for in-memory tests too; kept here for existing imports.
export { digestOf } from "./digests.js";

/** Wait long enough for the server clock to move on (update times are milliseconds). */
export const tick = () => new Promise((resolve) => setTimeout(resolve, 3));
