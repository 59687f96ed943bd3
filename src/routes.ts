import type { DescFile, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  EventsService,
  file_gatehouse_events_v2beta1_events,
} from "../gen/gatehouse/events/v2beta1/events_pb.js";
import {
  file_gatehouse_iam_v1_account_associations,
  GroupAccountAssociationsService as V1AccountAssociationsService,
} from "../gen/gatehouse/iam/v1/account_associations_pb.js";
import {
  file_gatehouse_iam_v1_group_invites,
  GroupInvitesService as V1GroupInvitesService,
} from "../gen/gatehouse/iam/v1/group_invites_pb.js";
import {
  file_gatehouse_iam_v1_groups,
  GroupsService as V1GroupsService,
} from "../gen/gatehouse/iam/v1/groups_pb.js";
import {
  file_gatehouse_iam_v1_identities,
  IdentitiesService as V1IdentitiesService,
} from "../gen/gatehouse/iam/v1/identities_pb.js";
import {
  file_gatehouse_iam_v1_identity_providers,
  IdentityProvidersService as V1IdentityProvidersService,
} from "../gen/gatehouse/iam/v1/identity_providers_pb.js";
import {
  file_gatehouse_iam_v1_role_bindings,
  RoleBindingsService as V1RoleBindingsService,
} from "../gen/gatehouse/iam/v1/role_bindings_pb.js";
import {
  file_gatehouse_iam_v1_roles,
  RolesService as V1RolesService,
} from "../gen/gatehouse/iam/v1/roles_pb.js";
import {
  AccessService,
  file_gatehouse_iam_v2beta1_access,
} from "../gen/gatehouse/iam/v2beta1/access_pb.js";
import {
  AccountAssociationsService,
  file_gatehouse_iam_v2beta1_account_associations,
} from "../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import {
  CallerService,
  file_gatehouse_iam_v2beta1_caller,
} from "../gen/gatehouse/iam/v2beta1/caller_pb.js";
import {
  file_gatehouse_iam_v2beta1_group_invites,
  GroupInvitesService,
} from "../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import {
  file_gatehouse_iam_v2beta1_groups,
  GroupsService,
} from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import {
  file_gatehouse_iam_v2beta1_identities,
  IdentitiesService,
} from "../gen/gatehouse/iam/v2beta1/identities_pb.js";
import {
  file_gatehouse_iam_v2beta1_identity_providers,
  IdentityProvidersService,
} from "../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import {
  file_gatehouse_iam_v2beta1_role_bindings,
  RoleBindingsService,
} from "../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import {
  file_gatehouse_iam_v2beta1_roles,
  RolesService,
} from "../gen/gatehouse/iam/v2beta1/roles_pb.js";
import {
  file_gatehouse_registry_v1_registry,
  RegistryService as V1RegistryService,
} from "../gen/gatehouse/registry/v1/registry_pb.js";
import {
  file_gatehouse_registry_v2beta1_repos,
  ReposService,
} from "../gen/gatehouse/registry/v2beta1/repos_pb.js";
import {
  file_gatehouse_registry_v2beta1_tags,
  TagsService,
} from "../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { file_gatehouse_sts_v1_sts, SecurityTokenService } from "../gen/gatehouse/sts/v1/sts_pb.js";
import {
  file_gatehouse_vulnerabilities_v1_advisories,
  AdvisoriesService as V1AdvisoriesService,
} from "../gen/gatehouse/vulnerabilities/v1/advisories_pb.js";
import {
  AdvisoriesService,
  file_gatehouse_vulnerabilities_v2beta1_advisories,
} from "../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { registration, type ServiceRegistration } from "./service-registration.js";
import { createEventsService } from "./services/events/events.js";
import { createAccessService } from "./services/iam/access.js";
import { createAccountAssociationsService } from "./services/iam/account-associations.js";
import { createCallerService } from "./services/iam/caller.js";
import { createGroupInvitesService } from "./services/iam/group-invites.js";
import { createGroupsService, type GroupsDeps } from "./services/iam/groups.js";
import { createIdentitiesService } from "./services/iam/identities.js";
import {
  createIdentityProvidersService,
  type IdentityProvidersDeps,
} from "./services/iam/identity-providers.js";
import { createRoleBindingsService } from "./services/iam/role-bindings.js";
import { createRolesService, type RolesDeps } from "./services/iam/roles.js";
import { createReposService } from "./services/registry/repos.js";
import { createTagsService } from "./services/registry/tags.js";
import { createSecurityTokenService, type ExchangeDeps } from "./services/sts/exchange.js";
import { createV1AccountAssociationsService } from "./services/v1/account-associations.js";
import { createV1AdvisoriesService } from "./services/v1/advisories.js";
import { createV1GroupInvitesService } from "./services/v1/group-invites.js";
import { createV1GroupsService } from "./services/v1/groups.js";
import { createV1IdentitiesService } from "./services/v1/identities.js";
import { createV1IdentityProvidersService } from "./services/v1/identity-providers.js";
import { createV1RegistryService } from "./services/v1/registry.js";
import { createV1RoleBindingsService } from "./services/v1/role-bindings.js";
import { createV1RolesService } from "./services/v1/roles.js";
import { type AuthorizeCall, createV2Calls } from "./services/v1/v2-calls.js";
import { createAdvisoriesService } from "./services/vulnerabilities/advisories.js";

/** The API's proto files, for server reflection. */
export const apiFiles: readonly DescFile[] = [
  file_gatehouse_iam_v2beta1_groups,
  file_gatehouse_iam_v2beta1_identities,
  file_gatehouse_iam_v2beta1_roles,
  file_gatehouse_iam_v2beta1_role_bindings,
  file_gatehouse_iam_v2beta1_identity_providers,
  file_gatehouse_iam_v2beta1_account_associations,
  file_gatehouse_iam_v2beta1_group_invites,
  file_gatehouse_iam_v2beta1_caller,
  file_gatehouse_iam_v2beta1_access,
  file_gatehouse_registry_v2beta1_repos,
  file_gatehouse_registry_v2beta1_tags,
  file_gatehouse_vulnerabilities_v2beta1_advisories,
  file_gatehouse_sts_v1_sts,
  file_gatehouse_iam_v1_groups,
  file_gatehouse_iam_v1_identities,
  file_gatehouse_iam_v1_roles,
  file_gatehouse_iam_v1_role_bindings,
  file_gatehouse_iam_v1_identity_providers,
  file_gatehouse_iam_v1_account_associations,
  file_gatehouse_iam_v1_group_invites,
  file_gatehouse_registry_v1_registry,
  file_gatehouse_vulnerabilities_v1_advisories,
  file_gatehouse_events_v2beta1_events,
];

/** The API's services: every one is served over gRPC, gRPC-Web, Connect and REST. */
export const apiServices: readonly DescService[] = [
  GroupsService,
  IdentitiesService,
  RolesService,
  RoleBindingsService,
  IdentityProvidersService,
  AccountAssociationsService,
  GroupInvitesService,
  CallerService,
  AccessService,
  ReposService,
  TagsService,
  AdvisoriesService,
  SecurityTokenService,
  V1GroupsService,
  V1IdentitiesService,
  V1RolesService,
  V1RoleBindingsService,
  V1IdentityProvidersService,
  V1AccountAssociationsService,
  V1GroupInvitesService,
  V1RegistryService,
  V1AdvisoriesService,
  EventsService,
];

/** What the services need; `authorizeCall` authorizes the v2 calls of the v1 adapters. */
export type ServiceDeps = GroupsDeps &
  RolesDeps &
  ExchangeDeps &
  IdentityProvidersDeps & { authorizeCall: AuthorizeCall };

/**
 * Create every API service's implementation, once: the one place where RPCs meet their
 * implementations. The Connect router and the REST gateway serve these same objects, so a
 * handler added here is reachable over all four protocols. Methods without an implementation
 * answer UNIMPLEMENTED.
 */
export function createServiceImpls(deps: ServiceDeps): ServiceRegistration[] {
  const current = [
    registration(GroupsService, createGroupsService(deps)),
    registration(IdentitiesService, createIdentitiesService(deps)),
    registration(RolesService, createRolesService(deps)),
    registration(RoleBindingsService, createRoleBindingsService(deps)),
    registration(IdentityProvidersService, createIdentityProvidersService(deps)),
    registration(AccountAssociationsService, createAccountAssociationsService(deps)),
    registration(GroupInvitesService, createGroupInvitesService(deps)),
    registration(CallerService, createCallerService(deps)),
    registration(AccessService, createAccessService(deps)),
    registration(ReposService, createReposService(deps)),
    registration(TagsService, createTagsService(deps)),
    registration(AdvisoriesService, createAdvisoriesService(deps)),
    registration(SecurityTokenService, createSecurityTokenService(deps)),
    registration(EventsService, createEventsService(deps)),
  ];
  // v1: adapters over the implementations above, each v2 call behind its own v2 rule. Their
  // REST paths ignore unknown query keys and body fields, as v1's gateway did.
  const v1 = { v2: createV2Calls(current, deps.authorizeCall) };
  const lenient = { restInput: "lenient" } as const;
  return [
    ...current,
    registration(V1GroupsService, createV1GroupsService(v1), lenient),
    registration(V1IdentitiesService, createV1IdentitiesService(v1), lenient),
    registration(V1RolesService, createV1RolesService(v1), lenient),
    registration(V1RoleBindingsService, createV1RoleBindingsService(v1), lenient),
    registration(V1IdentityProvidersService, createV1IdentityProvidersService(v1), lenient),
    registration(V1AccountAssociationsService, createV1AccountAssociationsService(v1), lenient),
    registration(V1GroupInvitesService, createV1GroupInvitesService(v1), lenient),
    registration(V1RegistryService, createV1RegistryService(v1), lenient),
    registration(V1AdvisoriesService, createV1AdvisoriesService(v1), lenient),
  ];
}

/** Register already created implementations on a Connect router. */
export function registerServices(
  router: ConnectRouter,
  services: readonly ServiceRegistration[],
): void {
  for (const { service, impl } of services) router.service(service, impl);
}
