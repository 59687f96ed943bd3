import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { registration, type ServiceRegistration } from "./service-registration.js";
import { type ServiceName, type ServiceTable, serviceEntries } from "./service-table.js";
import { createEventsService, type EventsDeps } from "./services/events/events.js";
import { createAccessService } from "./services/iam/access.js";
import { createAccessRequestsService } from "./services/iam/access-requests.js";
import { createAccountAssociationsService } from "./services/iam/account-associations.js";
import { createCallerService } from "./services/iam/caller.js";
import { createGroupInvitesService } from "./services/iam/group-invites.js";
import { createGroupsService, type GroupsDeps } from "./services/iam/groups.js";
import { createIdentitiesService } from "./services/iam/identities.js";
import {
  createIdentityProvidersService,
  type IdentityProvidersDeps,
} from "./services/iam/identity-providers.js";
import { createPeopleService } from "./services/iam/people.js";
import { createRoleBindingsService } from "./services/iam/role-bindings.js";
import { createRolesService, type RolesDeps } from "./services/iam/roles.js";
import { createScimService } from "./services/iam/scim.js";
import { createTeamsService } from "./services/iam/teams.js";
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
import { type AuthorizeCall, createV2Calls, type V1Deps } from "./services/v1/v2-calls.js";
import { createAdvisoriesService } from "./services/vulnerabilities/advisories.js";
import type { Store } from "./store/store.js";

/** What the services need; `authorizeCall` authorizes the v2 calls of the v1 adapters. */
export type ServiceDeps = GroupsDeps &
  RolesDeps &
  ExchangeDeps &
  IdentityProvidersDeps &
  EventsDeps & { authorizeCall: AuthorizeCall };

/** What an implementation factory gets: the services' deps, and v2 for the v1 adapters. */
type ImplDeps = ServiceDeps & V1Deps;

/**
 * The implementation of every entry of the service table, checked by the compiler against
 * the entry's descriptor. A table entry without a factory here fails to compile (this is
 * the one part of the table the web console must not bundle).
 */
const implementations: {
  [N in ServiceName]: (deps: ImplDeps) => Partial<ServiceImpl<ServiceTable[N]["service"]>>;
} = {
  groups: createGroupsService,
  identities: createIdentitiesService,
  roles: createRolesService,
  roleBindings: createRoleBindingsService,
  teams: createTeamsService,
  identityProviders: createIdentityProvidersService,
  scim: createScimService,
  accountAssociations: createAccountAssociationsService,
  groupInvites: createGroupInvitesService,
  people: createPeopleService,
  accessRequests: createAccessRequestsService,
  caller: createCallerService,
  access: createAccessService,
  repos: createReposService,
  tags: createTagsService,
  advisories: createAdvisoriesService,
  sts: createSecurityTokenService,
  v1Groups: createV1GroupsService,
  v1Identities: createV1IdentitiesService,
  v1Roles: createV1RolesService,
  v1RoleBindings: createV1RoleBindingsService,
  v1IdentityProviders: createV1IdentityProvidersService,
  v1AccountAssociations: createV1AccountAssociationsService,
  v1GroupInvites: createV1GroupInvitesService,
  v1Registry: createV1RegistryService,
  v1Advisories: createV1AdvisoriesService,
  events: createEventsService,
};

// Compile-time: every store operation the table lists is one the Store has.
type ListedOperation = {
  [N in ServiceName]: ServiceTable[N]["store"] extends readonly (infer O)[] ? O : never;
}[ServiceName];
type Exactly<T> = [T] extends [never] ? true : { notAStoreOperation: T };
/** True, or the compiler names the listed store operation the Store does not have. */
export const storeOperationsExist: Exactly<Exclude<ListedOperation, keyof Store>> = true;

/**
 * Create every API service's implementation, once: the one place where RPCs meet their
 * implementations. The Connect router and the REST gateway serve these same objects, so a
 * handler added here is reachable over all four protocols. Methods without an implementation
 * answer UNIMPLEMENTED.
 */
export function createServiceImpls(deps: ServiceDeps): ServiceRegistration[] {
  const made = new Map<ServiceName, ServiceRegistration>();
  const make = (name: ServiceName, d: ImplDeps) => {
    const entry = serviceEntries.find((e) => e.name === name);
    if (!entry) throw new Error(`no service ${name}`);
    // v1: adapters over the v2 implementations, each v2 call behind its own v2 rule. Their
    // REST paths ignore unknown query keys and body fields, as v1's gateway did.
    const options = entry.adapter ? ({ restInput: "lenient" } as const) : {};
    made.set(name, registration(entry.service, implementations[name](d) as never, options));
  };
  // The v2 adapters' v2 calls are only known once the v2 implementations exist.
  const notYet: V1Deps = {
    v2: {
      call() {
        throw new Error("only v1 adapters make v2 calls");
      },
      authorize() {
        throw new Error("only v1 adapters make v2 calls");
      },
    },
  };
  for (const e of serviceEntries) if (!e.adapter) make(e.name, { ...deps, ...notYet });
  const v2 = createV2Calls([...made.values()], deps.authorizeCall);
  for (const e of serviceEntries) if (e.adapter) make(e.name, { ...deps, v2 });
  // In table order, as the services were always registered.
  return serviceEntries.map((e) => made.get(e.name) as ServiceRegistration);
}

/** Register already created implementations on a Connect router. */
export function registerServices(
  router: ConnectRouter,
  services: readonly ServiceRegistration[],
): void {
  for (const { service, impl } of services) router.service(service, impl);
}
