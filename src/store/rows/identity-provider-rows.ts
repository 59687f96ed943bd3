import type { GroupMappingRecord, IdentityProviderRecord, OidcRecord } from "../iam-store.js";
import { declareResource } from "./resource.js";

/** An identity_providers row as both backends store it. */
export interface IdentityProviderRow {
  uid: string;
  group_uid: string;
  name: string;
  description: string;
  default_role: string;
  /** The OIDC settings but the client secret, as JSON. */
  oidc: string;
  client_secret: string;
  writer_uid: string;
  /** The declared email domains, as a JSON array (the lookup reads their own table). */
  email_domains: string;
  /** The group mappings, as a JSON array of {group, teamUid}. */
  group_mappings: string;
  /** When the name was claimed (the sign-in lookups' order): a rename claims it anew. */
  name_time: number;
  create_time: number;
  update_time: number;
}

/**
 * An identity provider's storage: a child of its group, whose delete it blocks. Its email
 * domains are also rows of identity_provider_domains, the sign-in page's index (ops).
 */
export const identityProviders = declareResource<IdentityProviderRow, IdentityProviderRecord>({
  kind: "identity provider",
  collection: "identityProviders",
  message: "gatehouse.iam.v2beta1.IdentityProvider",
  table: "identity_providers",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    default_role: { field: "default_role", updated: true },
    // The client secret has its own column, so that it never travels inside the JSON.
    oidc: { field: "oidc", updated: true },
    client_secret: { field: "oidc", updated: true },
    writer_uid: { field: "writer_uid", updated: true },
    email_domains: { field: "email_domains", updated: true },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    name_time: { internal: "when the name was claimed, the sign-in lookups' order", updated: true },
    group_mappings: { field: "group_mappings", updated: true },
  },
  computed: {
    redirect_uri: "the server's callback URL, from its public URL",
    default_role_grantable: "whether the writer may still grant the default role, when served",
  },
  parent: { kind: "group", column: "group_uid", onDelete: "block" },
  recordOf: identityProviderRecordOf,
});

/** The stored columns of OIDC settings: the secret in a column of its own. */
export function oidcColumns(o: OidcRecord) {
  const { clientSecret, ...rest } = o;
  return { oidc: JSON.stringify(rest), clientSecret };
}

/** The record of a stored identity provider. */
export function identityProviderRecordOf(row: IdentityProviderRow): IdentityProviderRecord {
  const oidc = JSON.parse(row.oidc) as Omit<OidcRecord, "clientSecret">;
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    name: row.name,
    description: row.description,
    defaultRole: row.default_role,
    oidc: {
      issuer: oidc.issuer,
      clientId: oidc.clientId,
      clientSecret: row.client_secret,
      additionalScopes: oidc.additionalScopes,
      groupsClaim: oidc.groupsClaim,
    },
    writerUid: row.writer_uid,
    emailDomains: JSON.parse(row.email_domains) as string[],
    groupMappings: JSON.parse(row.group_mappings) as GroupMappingRecord[],
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of identity providers. */
export const identityProviderListColumns = identityProviders.listColumns;
