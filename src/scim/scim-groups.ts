import type { ScimGroupRecord, ScimGroupWrite } from "../store/scim-store.js";
import { badRequest } from "./scim-error.js";
import type { FilterSchema } from "./scim-filter.js";
import { type Doc, normalize } from "./scim-resource.js";
import { commonAttributes, groupAttributes, groupSchema } from "./scim-schemas.js";
import { etagOf } from "./scim-users.js";

/** The Group resource's attributes (a Group is a team at the organization's root). */
export const groupResource: FilterSchema = {
  attributes: [...commonAttributes, ...groupAttributes],
  extensions: {},
};

/** The longest displayName: a team's name. */
const maxName = 256;

/**
 * What a Group body (or a Group's attributes after a PATCH) writes: displayName (the team's
 * name) is required; members are SCIM User ids.
 */
export function groupWrite(orgUid: string, id: string, doc: Doc, now: number): ScimGroupWrite {
  const attrs = normalize(doc, groupResource);
  const displayName = typeof attrs.displayName === "string" ? attrs.displayName.trim() : "";
  if (displayName === "") throw badRequest("invalidValue", "displayName is required");
  if (displayName.length > maxName) {
    throw badRequest("invalidValue", `displayName is longer than ${maxName} characters`);
  }
  const members = (attrs.members as Doc[] | undefined) ?? [];
  const memberIds = members.map((m, i) => {
    if (typeof m.value !== "string" || m.value === "") {
      throw badRequest("invalidValue", `members[${i}].value must be a User's id`);
    }
    return m.value;
  });
  return {
    orgUid,
    id,
    displayName,
    externalId: typeof attrs.externalId === "string" ? attrs.externalId : "",
    memberIds,
    now,
  };
}

/** A Group's attributes as a PATCH starts from. */
export function groupDoc(g: ScimGroupRecord): Doc {
  return {
    displayName: g.displayName,
    ...(g.externalId === "" ? {} : { externalId: g.externalId }),
    members: g.members.map((m) => ({ value: m.id })),
  };
}

/** A Group as SCIM serves it, at `base` (the organization's SCIM base URL). */
export function renderGroup(g: ScimGroupRecord, base: string): Doc {
  return {
    schemas: [groupSchema],
    id: g.id,
    ...(g.externalId === "" ? {} : { externalId: g.externalId }),
    displayName: g.displayName,
    members: g.members.map((m) => ({
      value: m.id,
      display: m.display,
      type: "User",
      $ref: `${base}/Users/${m.id}`,
    })),
    meta: {
      resourceType: "Group",
      created: new Date(g.createTime).toISOString(),
      lastModified: new Date(g.updateTime).toISOString(),
      location: `${base}/Groups/${g.id}`,
      version: etagOf(g.version),
    },
  };
}
