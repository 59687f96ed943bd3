// The request sequences the two directories send, as their documentation shows them. The
// bodies are copied from the documentation, with only the ids a test must fill in made
// parameters; nothing here is shaped to what Gatehouse accepts.

const userSchema = "urn:ietf:params:scim:schemas:core:2.0:User";
const enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const patchOp = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

/** One request of a sequence: method, path under the SCIM base, body. */
export interface ScimStep {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
}

/**
 * Okta: "SCIM 2.0 protocol reference" (developer.okta.com/docs/api/openapi/okta-scim/guides/
 * scim-20/): the user lookup before a create, the create, a PUT of the whole user on a profile
 * change, and deactivation as a PATCH `replace` without a path.
 */
export const okta = {
  lookup: (userName: string): ScimStep => ({
    method: "GET",
    path: `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
  }),
  create: (): ScimStep => ({
    method: "POST",
    path: "/Users",
    body: {
      schemas: [userSchema],
      userName: "test.user@okta.local",
      name: { givenName: "Test", familyName: "User" },
      emails: [{ primary: true, value: "test.user@okta.local", type: "work" }],
      displayName: "Test User",
      locale: "en-US",
      externalId: "00ujl29u0le5T6Aj10h7",
      groups: [],
      password: "1mz050nq",
      active: true,
    },
  }),
  get: (id: string): ScimStep => ({ method: "GET", path: `/Users/${id}` }),
  put: (id: string): ScimStep => ({
    method: "PUT",
    path: `/Users/${id}`,
    body: {
      schemas: [userSchema],
      id,
      userName: "test.user@okta.local",
      name: { givenName: "Another", familyName: "User" },
      emails: [{ primary: true, value: "test.user@okta.local", type: "work" }],
      displayName: "Another User",
      locale: "en-US",
      externalId: "00ujl29u0le5T6Aj10h7",
      groups: [],
      active: true,
      meta: { resourceType: "User" },
    },
  }),
  deactivate: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Users/${id}`,
    body: { schemas: [patchOp], Operations: [{ op: "replace", value: { active: false } }] },
  }),
  reactivate: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Users/${id}`,
    body: { schemas: [patchOp], Operations: [{ op: "replace", value: { active: true } }] },
  }),
};

/**
 * Microsoft Entra ID: "Tutorial: Develop and plan provisioning for a SCIM endpoint in
 * Microsoft Entra ID" (learn.microsoft.com/entra/identity/app-provisioning/
 * use-scim-to-provision-users-and-groups), its "User operations" requests: the lookup by
 * userName, the create with the enterprise extension, `Replace` (capitalised) with a filtered
 * path, the manager as a bare id, disabling with the string "False", and the delete.
 */
export const entra = {
  lookup: (userName: string): ScimStep => ({
    method: "GET",
    path: `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`,
  }),
  create: (): ScimStep => ({
    method: "POST",
    path: "/Users",
    body: {
      schemas: [userSchema, enterprise],
      externalId: "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
      userName: "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
      active: true,
      emails: [
        {
          primary: true,
          type: "work",
          value: "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com",
        },
      ],
      meta: { resourceType: "User" },
      name: { formatted: "givenName familyName", familyName: "familyName", givenName: "givenName" },
      roles: [],
    },
  }),
  lookupByExternalId: (): ScimStep => ({
    method: "GET",
    path: `/Users?filter=${encodeURIComponent('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`,
  }),
  update: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Users/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [
        {
          op: "Replace",
          path: 'emails[type eq "work"].value',
          value: "updatedEmail@microsoft.com",
        },
        { op: "Replace", path: "name.familyName", value: "updatedFamilyName" },
      ],
    },
  }),
  manager: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Users/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [
        {
          op: "Add",
          path: `${enterprise}:manager`,
          value: "2819c223-7f76-453a-919d-413861904646",
        },
      ],
    },
  }),
  disable: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Users/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [{ op: "Replace", path: "active", value: "False" }],
    },
  }),
  delete: (id: string): ScimStep => ({ method: "DELETE", path: `/Users/${id}` }),
};

const groupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group";

/**
 * Okta's group push ("SCIM 2.0 protocol reference", Groups): create, the lookup without
 * members, a rename as `replace` without a path (the id in the value), members added with
 * `add` on `members` and removed with a filtered `remove`, and the delete.
 */
export const oktaGroups = {
  create: (): ScimStep => ({
    method: "POST",
    path: "/Groups",
    body: { schemas: [groupSchema], displayName: "Test SCIMv2", members: [] },
  }),
  lookup: (): ScimStep => ({
    method: "GET",
    path: `/Groups?filter=${encodeURIComponent('displayName eq "Test SCIMv2"')}&excludedAttributes=members&startIndex=1&count=100`,
  }),
  rename: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [{ op: "replace", value: { id, displayName: "Test SCIMv2 Updated" } }],
    },
  }),
  add: (id: string, userId: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [
        { op: "add", path: "members", value: [{ value: userId, display: "test.user@okta.local" }] },
      ],
    },
  }),
  remove: (id: string, userId: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [{ op: "remove", path: `members[value eq "${userId}"]` }],
    },
  }),
  delete: (id: string): ScimStep => ({ method: "DELETE", path: `/Groups/${id}` }),
};

/**
 * Entra ID's group operations (the tutorial's "Group operations"): a create naming Microsoft's
 * own schema too, the lookup by displayName without members, `Add` and `Remove` of members
 * each listing the members as the value (`$ref` null), and `Replace` of displayName.
 */
export const entraGroups = {
  create: (): ScimStep => ({
    method: "POST",
    path: "/Groups",
    body: {
      schemas: [
        groupSchema,
        "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group",
      ],
      externalId: "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
      displayName: "displayName",
      meta: { resourceType: "Group" },
    },
  }),
  lookup: (): ScimStep => ({
    method: "GET",
    path: `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`,
  }),
  add: (id: string, userId: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [{ op: "Add", path: "members", value: [{ $ref: null, value: userId }] }],
    },
  }),
  remove: (id: string, userId: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [{ op: "Remove", path: "members", value: [{ $ref: null, value: userId }] }],
    },
  }),
  rename: (id: string): ScimStep => ({
    method: "PATCH",
    path: `/Groups/${id}`,
    body: {
      schemas: [patchOp],
      Operations: [
        {
          op: "Replace",
          path: "displayName",
          value: "1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName",
        },
      ],
    },
  }),
  delete: (id: string): ScimStep => ({ method: "DELETE", path: `/Groups/${id}` }),
};
