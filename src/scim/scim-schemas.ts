/**
 * The SCIM schemas Gatehouse serves (RFC 7643 sections 4, 4.3 and 7): the attributes it keeps
 * of a User, of the enterprise extension and of a Group, as the `/Schemas` endpoint shows
 * them. The same definitions check every body and PATCH path (scim-resource.ts), so what is
 * advertised is what is accepted.
 */

/** The core User schema's URN. */
export const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
/** The enterprise User extension's URN. */
export const enterpriseSchema = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
/** The core Group schema's URN. */
export const groupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group";
/** The URN of a PATCH body (RFC 7644 section 3.5.2). */
export const patchOpSchema = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
/** The URN of a list answer (RFC 7644 section 3.4.2). */
export const listSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse";

/** An attribute definition (RFC 7643 section 7), as /Schemas shows it. */
export interface AttributeDef {
  readonly name: string;
  readonly type: "string" | "boolean" | "complex" | "reference" | "dateTime";
  readonly multiValued: boolean;
  readonly description: string;
  readonly required: boolean;
  readonly caseExact: boolean;
  readonly mutability: "readOnly" | "readWrite" | "immutable" | "writeOnly";
  readonly returned: "always" | "never" | "default" | "request";
  readonly uniqueness: "none" | "server" | "global";
  readonly subAttributes?: readonly AttributeDef[];
  /** The resource types a reference may point to: required of a `reference` (RFC 7643 7). */
  readonly referenceTypes?: readonly string[];
}

type Opts = Partial<Omit<AttributeDef, "name" | "description">>;

function attr(name: string, description: string, opts: Opts = {}): AttributeDef {
  return {
    name,
    type: "string",
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: "readWrite",
    returned: "default",
    uniqueness: "none",
    ...opts,
  };
}

// The sub-attributes of emails and phone numbers (RFC 7643 section 4.1.2).
const multiValue = (what: string) => [
  attr("value", `The ${what}.`),
  attr("display", `A human-readable ${what}.`),
  attr("type", `A label: "work", "home", "other".`),
  attr("primary", `Whether this is the primary ${what}.`, { type: "boolean" }),
];

/** The core User attributes Gatehouse keeps (id, meta and groups are its own). */
export const userAttributes: readonly AttributeDef[] = [
  attr("userName", "The person's unique name in the organization (without case).", {
    required: true,
    uniqueness: "server",
  }),
  attr("name", "The person's name.", {
    type: "complex",
    subAttributes: [
      attr("formatted", "The full name."),
      attr("familyName", "The family name."),
      attr("givenName", "The given name."),
      attr("middleName", "The middle name."),
      attr("honorificPrefix", "A prefix (Ms.)."),
      attr("honorificSuffix", "A suffix (III)."),
    ],
  }),
  attr("displayName", "The name shown for the person."),
  attr("nickName", "A casual name."),
  attr("title", "The person's title."),
  attr("userType", "The kind of person (Employee, Contractor)."),
  attr("preferredLanguage", "The preferred language."),
  attr("locale", "The locale."),
  attr("timezone", "The time zone."),
  attr("active", "Whether the person may sign in: false ends their access at once.", {
    type: "boolean",
  }),
  attr("emails", "The person's email addresses.", {
    type: "complex",
    multiValued: true,
    subAttributes: multiValue("email address"),
  }),
  attr("phoneNumbers", "The person's phone numbers.", {
    type: "complex",
    multiValued: true,
    subAttributes: multiValue("phone number"),
  }),
  attr("groups", "The teams the person is a member of.", {
    type: "complex",
    multiValued: true,
    mutability: "readOnly",
    subAttributes: [
      attr("value", "The team's id.", { mutability: "readOnly" }),
      attr("$ref", "The team's URI.", {
        type: "reference",
        referenceTypes: ["Group"],
        mutability: "readOnly",
      }),
      attr("display", "The team's name.", { mutability: "readOnly" }),
    ],
  }),
];

/** The enterprise extension's attributes Gatehouse keeps (RFC 7643 section 4.3). */
export const enterpriseAttributes: readonly AttributeDef[] = [
  attr("employeeNumber", "The employee number."),
  attr("costCenter", "The cost center."),
  attr("organization", "The organization."),
  attr("division", "The division."),
  attr("department", "The department."),
  attr("manager", "The person's manager.", {
    type: "complex",
    subAttributes: [
      attr("value", "The manager's id."),
      attr("displayName", "The manager's name.", { mutability: "readOnly" }),
    ],
  }),
];

/** The Group attributes (a Group is a team of the organization). */
export const groupAttributes: readonly AttributeDef[] = [
  attr("displayName", "The team's name.", { required: true, uniqueness: "server" }),
  attr("members", "The team's members (Users).", {
    type: "complex",
    multiValued: true,
    subAttributes: [
      attr("value", "The member's id.", { mutability: "immutable" }),
      attr("$ref", "The member's URI.", {
        type: "reference",
        referenceTypes: ["User"],
        mutability: "immutable",
      }),
      attr("display", "The member's name.", { mutability: "readOnly" }),
      attr("type", '"User".', { mutability: "immutable" }),
    ],
  }),
];

/** The common attributes every resource has (RFC 7643 section 3.1). */
export const commonAttributes: readonly AttributeDef[] = [
  attr("id", "The resource's id, set by Gatehouse.", {
    caseExact: true,
    mutability: "readOnly",
    returned: "always",
    uniqueness: "server",
  }),
  attr("externalId", "The client's id of the resource.", { caseExact: true }),
];

/** Find an attribute definition by name, without case (attribute names are case-insensitive). */
export function findAttribute(
  defs: readonly AttributeDef[],
  name: string,
): AttributeDef | undefined {
  const lower = name.toLowerCase();
  return defs.find((d) => d.name.toLowerCase() === lower);
}

/** A schema as `/Schemas` serves it. */
export function schemaResource(
  id: string,
  name: string,
  description: string,
  attributes: readonly AttributeDef[],
  location: string,
): Record<string, unknown> {
  return {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: "Schema", location: `${location}/Schemas/${id}` },
  };
}
