import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { AccessService } from "../../gen/gatehouse/iam/v2beta1/access_pb.js";
import { AccountAssociationsService } from "../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { CallerService } from "../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { currentToken } from "./session.js";

// Every call carries the signed-in person's token (refreshed first when it is about to expire).
const bearer: Interceptor = (next) => async (req) => {
  const token = await currentToken();
  if (token) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [bearer] });

/** The API, through connect-web and the generated service descriptors only. */
export const api = {
  caller: createClient(CallerService, transport),
  access: createClient(AccessService, transport),
  groups: createClient(GroupsService, transport),
  identities: createClient(IdentitiesService, transport),
  roles: createClient(RolesService, transport),
  bindings: createClient(RoleBindingsService, transport),
  invites: createClient(GroupInvitesService, transport),
  providers: createClient(IdentityProvidersService, transport),
  accounts: createClient(AccountAssociationsService, transport),
  repos: createClient(ReposService, transport),
  tags: createClient(TagsService, transport),
  advisories: createClient(AdvisoriesService, transport),
  events: createClient(EventsService, transport),
};

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
