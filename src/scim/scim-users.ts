import type { ScimUserRecord, ScimUserWrite } from "../store/scim-store.js";
import { badRequest } from "./scim-error.js";
import type { FilterSchema } from "./scim-filter.js";
import { type Doc, normalize } from "./scim-resource.js";
import {
  commonAttributes,
  enterpriseAttributes,
  enterpriseSchema,
  userAttributes,
  userSchema,
} from "./scim-schemas.js";

/** The User resource's attributes and extension, as filters, bodies and paths see them. */
export const userResource: FilterSchema = {
  attributes: [...commonAttributes, ...userAttributes],
  extensions: { [enterpriseSchema]: enterpriseAttributes },
};

/** The longest userName, as an identity name (API.md "Limits"). */
const maxUserName = 256;

/**
 * What a User body (or a User's attributes after a PATCH) writes: userName is required and
 * unique without case; active defaults to true; the email the person is matched by is the
 * primary email, else the first, else the userName when it is an address.
 */
export function userWrite(
  orgUid: string,
  id: string,
  doc: Doc,
  now: number,
): Omit<ScimUserWrite, "personUids"> {
  const attrs = normalize(doc, userResource);
  const userName = typeof attrs.userName === "string" ? attrs.userName.trim() : "";
  if (userName === "") throw badRequest("invalidValue", "userName is required");
  if (userName.length > maxUserName) {
    throw badRequest("invalidValue", `userName is longer than ${maxUserName} characters`);
  }
  attrs.userName = userName;
  const active = attrs.active !== false;
  attrs.active = active;
  const emails = (attrs.emails as Doc[] | undefined) ?? [];
  const primary = emails.find((e) => e.primary === true) ?? emails[0];
  const email =
    typeof primary?.value === "string" ? primary.value : userName.includes("@") ? userName : "";
  const name = attrs.name as Doc | undefined;
  const displayName =
    (typeof attrs.displayName === "string" && attrs.displayName) ||
    (typeof name?.formatted === "string" && name.formatted) ||
    [name?.givenName, name?.familyName].filter((p) => typeof p === "string").join(" ") ||
    userName;
  return {
    orgUid,
    id,
    userName,
    externalId: typeof attrs.externalId === "string" ? attrs.externalId : "",
    displayName,
    email,
    active,
    attributes: attrs,
    now,
  };
}

/** The version of a record as its ETag (RFC 7644 3.14): weak, it counts writes. */
export function etagOf(version: number): string {
  return `W/"${version}"`;
}

/** A User as SCIM serves it, at `base` (the organization's SCIM base URL). */
export function renderUser(
  u: ScimUserRecord,
  base: string,
  groups: readonly { value: string; display: string }[] = [],
): Doc {
  const { [enterpriseSchema]: enterprise, ...core } = u.attributes as Doc;
  return {
    schemas: enterprise ? [userSchema, enterpriseSchema] : [userSchema],
    id: u.id,
    ...core,
    ...(enterprise ? { [enterpriseSchema]: enterprise } : {}),
    active: u.active,
    groups: groups.map((g) => ({ ...g, $ref: `${base}/Groups/${g.value}` })),
    meta: {
      resourceType: "User",
      created: new Date(u.createTime).toISOString(),
      lastModified: new Date(u.updateTime).toISOString(),
      location: `${base}/Users/${u.id}`,
      version: etagOf(u.version),
    },
  };
}
