import { describe, expect, it } from "vitest";
import { AccountAssociationsService } from "../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { compileHttpRules } from "../../src/rest/http-rules.js";
import { createRouteTable } from "../../src/rest/route-table.js";
import { defaultRules, type RuleInit, thingsFixture } from "./fixtures.js";

const api = [
  GroupsService,
  IdentitiesService,
  RolesService,
  RoleBindingsService,
  IdentityProvidersService,
  AccountAssociationsService,
  GroupInvitesService,
  ReposService,
  TagsService,
  AdvisoriesService,
  SecurityTokenService,
];

describe("compileHttpRules", () => {
  it("reads every binding of the API into one route table", () => {
    const rules = compileHttpRules(api);
    // Five RPCs per resource, Tags has no Update, plus Redeem, BatchCreateRoleBindings and
    // both STS bindings.
    expect(rules).toHaveLength(10 * 5 - 1 + 1 + 1 + 2);
    const table = createRouteTable(rules);
    const rpc = (method: string, path: string) => table.match(method, path)?.route.rpc;
    expect(rpc("POST", "/iam/v2beta1/groupInvites:redeem")).toBe(
      "gatehouse.iam.v2beta1.GroupInvitesService/RedeemGroupInvite",
    );
    // The custom verb wins over the same path without it (`{parent=**}` stops at the `:`).
    expect(
      rpc("POST", "/iam/v2beta1/roleBindings/0123456789abcdef0123456789abcdef01234567:batchCreate"),
    ).toBe("gatehouse.iam.v2beta1.RoleBindingsService/BatchCreateRoleBindings");
    expect(rpc("POST", "/iam/v2beta1/groups")).toBe(
      "gatehouse.iam.v2beta1.GroupsService/CreateGroup",
    );
    expect(rpc("GET", "/sts/exchange")).toBe("gatehouse.sts.v1.SecurityTokenService/Exchange");
    expect(rpc("POST", "/sts/exchange")).toBe("gatehouse.sts.v1.SecurityTokenService/Exchange");
  });

  it("resolves bodies, path fields and the update mask", () => {
    const rules = compileHttpRules([GroupsService]);
    const update = rules.find((r) => r.method.name === "UpdateGroup")!;
    expect(update).toMatchObject({
      httpMethod: "PATCH",
      rpc: "gatehouse.iam.v2beta1.GroupsService/UpdateGroup",
    });
    expect(update.body.kind === "field" && update.body.field.name).toBe("group");
    expect(update.pathFields.map((p) => p.name)).toEqual(["group.uid"]);
    expect(update.updateMask?.name).toBe("update_mask");
    const create = rules.find((r) => r.method.name === "CreateGroup")!;
    expect(create.updateMask).toBeUndefined();
    expect(rules.find((r) => r.method.name === "ListGroups")!.body).toEqual({ kind: "none" });
  });

  it("skips methods without the option", () => {
    const rules = compileHttpRules([thingsFixture({ GetThing: defaultRules.GetThing! }).service]);
    expect(rules.map((r) => r.method.name)).toEqual(["GetThing"]);
  });

  it("honours a custom method and response_body", () => {
    const rules = compileHttpRules([
      thingsFixture({
        ListThings: {
          pattern: { case: "custom", value: { kind: "report", path: "/v1/things" } },
          responseBody: "things",
        },
      }).service,
    ]);
    expect(rules[0]).toMatchObject({ httpMethod: "REPORT" });
    expect(rules[0]!.responseBody?.name).toBe("things");
  });

  it.each<[string, RuleInit, string]>([
    [
      "a malformed template",
      { pattern: { case: "get", value: "/v1/**/x" } },
      "malformed path template",
    ],
    ["a template without /", { pattern: { case: "get", value: "v1/x" } }, "must start with"],
    ["an unknown path field", { pattern: { case: "get", value: "/v1/{nope}" } }, "no field nope"],
    [
      "a JSON name in the template",
      { pattern: { case: "get", value: "/v1/{pageSize}" } },
      "no field pageSize",
    ],
    ["a message path field", { pattern: { case: "get", value: "/v1/{uidp}" } }, "singular scalar"],
    ["a repeated path field", { pattern: { case: "get", value: "/v1/{tags}" } }, "singular scalar"],
    [
      "an unknown body field",
      { pattern: { case: "post", value: "/v1/x" }, body: "nope" },
      "body: no field nope",
    ],
    [
      "an unknown response field",
      { pattern: { case: "get", value: "/v1/x" }, responseBody: "nope" },
      "response_body: no field nope",
    ],
    ["no pattern", {}, "no pattern"],
    [
      "a bad custom kind",
      { pattern: { case: "custom", value: { kind: "NO PE", path: "/v1/x" } } },
      "bad custom kind",
    ],
    [
      "nested additional bindings",
      {
        pattern: { case: "get", value: "/v1/x" },
        additionalBindings: [
          {
            pattern: { case: "get", value: "/v1/y" },
            additionalBindings: [{ pattern: { case: "get", value: "/v1/z" } }],
          },
        ],
      },
      "may not nest",
    ],
  ])("refuses %s at start-up", (_, rule, why) => {
    const { service } = thingsFixture({ ListThings: rule });
    expect(() => compileHttpRules([service])).toThrow(why);
    expect(() => compileHttpRules([service])).toThrow("resttest.ThingsService/ListThings");
  });
});
