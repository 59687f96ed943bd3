import type { DescFile, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  AccountAssociationsService,
  file_gatehouse_iam_v2beta1_account_associations,
} from "../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
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
  file_gatehouse_registry_v2beta1_repos,
  ReposService,
} from "../gen/gatehouse/registry/v2beta1/repos_pb.js";
import {
  file_gatehouse_registry_v2beta1_tags,
  TagsService,
} from "../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { file_gatehouse_sts_v1_sts, SecurityTokenService } from "../gen/gatehouse/sts/v1/sts_pb.js";
import {
  AdvisoriesService,
  file_gatehouse_vulnerabilities_v2beta1_advisories,
} from "../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { createGroupsService, type GroupsDeps } from "./services/iam/groups.js";
import { createIdentitiesService } from "./services/iam/identities.js";
import { createRoleBindingsService } from "./services/iam/role-bindings.js";
import { createRolesService, type RolesDeps } from "./services/iam/roles.js";
import { createSecurityTokenService, type ExchangeDeps } from "./services/sts/exchange.js";

/** The API's proto files, for server reflection. */
export const apiFiles: readonly DescFile[] = [
  file_gatehouse_iam_v2beta1_groups,
  file_gatehouse_iam_v2beta1_identities,
  file_gatehouse_iam_v2beta1_roles,
  file_gatehouse_iam_v2beta1_role_bindings,
  file_gatehouse_iam_v2beta1_identity_providers,
  file_gatehouse_iam_v2beta1_account_associations,
  file_gatehouse_iam_v2beta1_group_invites,
  file_gatehouse_registry_v2beta1_repos,
  file_gatehouse_registry_v2beta1_tags,
  file_gatehouse_vulnerabilities_v2beta1_advisories,
  file_gatehouse_sts_v1_sts,
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
  ReposService,
  TagsService,
  AdvisoriesService,
  SecurityTokenService,
];

/** What the services need. */
export type ServiceDeps = GroupsDeps & RolesDeps & ExchangeDeps;

/**
 * Register every API service on the router: the one place where RPCs meet their
 * implementations. Methods without an implementation answer UNIMPLEMENTED.
 */
export function registerServices(router: ConnectRouter, deps: ServiceDeps): void {
  router.service(GroupsService, createGroupsService(deps));
  router.service(IdentitiesService, createIdentitiesService(deps));
  router.service(RolesService, createRolesService(deps));
  router.service(RoleBindingsService, createRoleBindingsService(deps));
  router.service(IdentityProvidersService, {});
  router.service(AccountAssociationsService, {});
  router.service(GroupInvitesService, {});
  router.service(ReposService, {});
  router.service(TagsService, {});
  router.service(AdvisoriesService, {});
  router.service(SecurityTokenService, createSecurityTokenService(deps));
}
