import type { IdentityProviderRecord, OidcRecord } from "../iam-store.js";

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
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}
