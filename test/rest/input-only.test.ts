import { create, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GroupSchema } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import {
  IdentityProviderSchema,
  ListIdentityProvidersResponseSchema,
} from "../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import {
  ListRoleBindingsResponseSchema,
  RoleBindingSchema,
} from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { createOutputPruner } from "../../src/rest/input-only.js";

const emitAll = { alwaysEmitImplicit: true };

describe("createOutputPruner", () => {
  it("drops a binding's input-only uids, alone and inside a list", () => {
    const binding = create(RoleBindingSchema, { uid: "u", identityUid: "i", roleUid: "r" });
    const one = toJson(RoleBindingSchema, binding, emitAll);
    createOutputPruner(RoleBindingSchema)?.(one);
    expect(one).toMatchObject({ uid: "u" });
    expect(Object.keys(one as object)).not.toContain("identityUid");
    expect(Object.keys(one as object)).not.toContain("roleUid");

    const page = create(ListRoleBindingsResponseSchema, { roleBindings: [binding, binding] });
    const json = toJson(ListRoleBindingsResponseSchema, page, emitAll);
    createOutputPruner(ListRoleBindingsResponseSchema)?.(json);
    const listed = (json as { roleBindings: object[] }).roleBindings;
    expect(listed).toHaveLength(2);
    for (const b of listed) expect(Object.keys(b)).not.toContain("roleUid");
  });

  it("drops a nested client secret, even an empty one emitted as an implicit value", () => {
    const idp = create(IdentityProviderSchema, { uid: "u", oidc: { issuer: "https://x" } });
    const json = toJson(
      ListIdentityProvidersResponseSchema,
      {
        $typeName: "gatehouse.iam.v2beta1.ListIdentityProvidersResponse",
        identityProviders: [idp],
        totalCount: 1n,
        skipped: 0,
      } as never,
      emitAll,
    );
    createOutputPruner(ListIdentityProvidersResponseSchema)?.(json);
    expect(JSON.stringify(json)).not.toContain("clientSecret");
    expect(JSON.stringify(json)).toContain("https://x");
  });

  it("is undefined for a type with nothing input-only, so nothing runs per request", () => {
    expect(createOutputPruner(GroupSchema)).toBeUndefined();
  });
});
