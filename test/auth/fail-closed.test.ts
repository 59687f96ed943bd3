import type { DescMethod } from "@bufbuild/protobuf";
import { createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GroupsService as V1GroupsService } from "../../gen/gatehouse/iam/v1/groups_pb.js";
import { AccessRequestsService } from "../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { createAccessControl } from "../../src/auth/access-interceptor.js";
import { ruleOf } from "../../src/auth/policy.js";
import { useTestServer } from "../helpers/test-server.js";

// The access check fails closed: the RPCs served and the RPCs guarded are one list, a served
// RPC without a rule stops the server, and a call the guard was not told about is denied.

const unusedDeps = {} as Parameters<typeof createAccessControl>[0];

describe("guard", () => {
  it("refuses a served method that has no rule, naming it", () => {
    const access = createAccessControl(unusedDeps);
    const unknown = {
      ...GroupsService.method.getGroup,
      name: "GetSecret",
      parent: { ...GroupsService, typeName: "gatehouse.test.v1.SecretsService" },
    } as unknown as DescMethod;
    expect(() => access.guard([GroupsService.method.getGroup, unknown])).toThrow(
      /no rule for gatehouse\.test\.v1\.SecretsService\/GetSecret/,
    );
  });
});

describe("v1 adapters", () => {
  it("stop the server when a v2 call they name is not served", () => {
    const access = createAccessControl(unusedDeps);
    expect(() => access.guard([V1GroupsService.method.create])).toThrow(
      /gatehouse\.iam\.v2beta1\.GroupsService\/CreateGroup \(called by gatehouse\.iam\.v1\.GroupsService\/Create\)/,
    );
  });

  it("may make only the v2 calls their rule names", async () => {
    const access = createAccessControl(unusedDeps);
    // v1 Groups' RequestGroupAccess calls v2 access requests: served too.
    access.guard([
      ...GroupsService.methods,
      ...AccessRequestsService.methods,
      ...V1GroupsService.methods,
    ]);
    // Outside a v1 call (no adapter rule ran), no v2 call is authorized this way.
    await expect(
      access.authorizeCall(GroupsService.method.deleteGroup, {}, createContextValues()),
    ).rejects.toThrow(/does not name gatehouse\.iam\.v2beta1\.GroupsService\/DeleteGroup/);
  });
});

describe("every served RPC", () => {
  const srv = useTestServer();

  it("is one the server knows: the API, health and reflection", () => {
    const services = new Set(srv.server.served.map((m) => m.parent.typeName));
    expect(services).toContain("gatehouse.iam.v2beta1.GroupsService");
    expect(services).toContain("gatehouse.registry.v2beta1.ReposService");
    expect(services).toContain("grpc.health.v1.Health");
    expect(services).toContain("grpc.reflection.v1.ServerReflection");
  });

  it("has a rule, and without a token only the public ones answer", async () => {
    const unary = srv.server.served.filter((m) => m.methodKind === "unary");
    expect(unary.length).toBeGreaterThan(50);
    for (const method of unary) {
      const rpc = `${method.parent.typeName}/${method.name}`;
      const rule = ruleOf(rpc);
      expect(rule, rpc).toBeDefined();
      const res = await fetch(`${srv.url}/${rpc}`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1" },
        body: "{}",
      });
      const body = (await res.json()) as { code?: string };
      if (rule?.kind === "public") {
        expect(body.code, rpc).not.toBe("unauthenticated");
      } else {
        expect([res.status, body.code], rpc).toEqual([401, "unauthenticated"]);
      }
    }
  });
});
