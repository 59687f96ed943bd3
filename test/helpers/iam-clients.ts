import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AccessRequestsService } from "../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { AccountAssociationsService } from "../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { ScimService } from "../../gen/gatehouse/iam/v2beta1/scim_pb.js";
import { TeamsService } from "../../gen/gatehouse/iam/v2beta1/teams_pb.js";
import { withHeaders } from "./groups-clients.js";

/** Clients of the IAM services over one transport. */
export interface IamClients {
  groups: Client<typeof GroupsService>;
  identities: Client<typeof IdentitiesService>;
  roles: Client<typeof RolesService>;
  roleBindings: Client<typeof RoleBindingsService>;
  teams: Client<typeof TeamsService>;
  scim: Client<typeof ScimService>;
  identityProviders: Client<typeof IdentityProvidersService>;
  accountAssociations: Client<typeof AccountAssociationsService>;
  groupInvites: Client<typeof GroupInvitesService>;
  accessRequests: Client<typeof AccessRequestsService>;
}

/** The protocols the IAM suites run over, by name. */
export const protocols = ["connect", "grpc"] as const;
export type Protocol = (typeof protocols)[number];

/** Create a transport of `protocol` to `baseUrl` sending `headers` (the bearer token). */
export function transportFor(
  protocol: Protocol,
  baseUrl: string,
  headers: Record<string, string> = {},
): Transport {
  const interceptors = [withHeaders(headers)];
  return protocol === "connect"
    ? createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors })
    : createGrpcTransport({ baseUrl, interceptors });
}

/** Create the IAM clients over `transport`. */
export function iamClients(transport: Transport): IamClients {
  return {
    groups: createClient(GroupsService, transport),
    identities: createClient(IdentitiesService, transport),
    roles: createClient(RolesService, transport),
    roleBindings: createClient(RoleBindingsService, transport),
    teams: createClient(TeamsService, transport),
    scim: createClient(ScimService, transport),
    identityProviders: createClient(IdentityProvidersService, transport),
    accountAssociations: createClient(AccountAssociationsService, transport),
    groupInvites: createClient(GroupInvitesService, transport),
    accessRequests: createClient(AccessRequestsService, transport),
  };
}

// Socket-free, for in-memory tests too; kept here for existing imports.
export { failure, outcome } from "./connect-errors.js";
