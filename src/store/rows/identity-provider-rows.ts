import type { IdentityProviderRecord, OidcRecord } from "../iam-store.js";
import type { ListColumns } from "../list-clauses.js";

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
  create_time: number;
  update_time: number;
}

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
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of identity providers. */
export const identityProviderListColumns: ListColumns = {
  table: "identity_providers",
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};
