import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { failure } from "../helpers/connect-errors.js";
import type { IamClients } from "../helpers/iam-clients.js";
import { iamOf, useInMemory } from "../helpers/in-memory.js";
import type { TestOrg } from "../helpers/test-orgs.js";

// The built-in roles of the real service that clients written against it rely on: a viewer
// pulls (test/registry/token-endpoint.test.ts), registry.push makes the groups and repos a push
// names, registry.pull_token_creator makes pull identities and binds them, within its powers.

const role = (name: string) => builtinRoles.find((r) => r.name === name)!;

const ts = useInMemory();
let org: TestOrg;
let owner: IamClients;
beforeAll(async () => {
  org = await ts.makeOrg("builtins");
  owner = iamOf(ts.clients(org.owner.headers));
});

describe("built-in roles", () => {
  it("are listed with the same uids everywhere, the real service's registry roles among them", async () => {
    const listed = await owner.roles.listRoles({ uidp: { inRoot: true } as never, pageSize: 50 });
    const byName = new Map(listed.roles.map((r) => [r.name, r]));
    for (const name of [
      "viewer",
      "registry.pull",
      "registry.push",
      "registry.pull_token_creator",
    ]) {
      expect(byName.get(name)?.uid, name).toBe(role(name).uid);
    }
    expect(byName.get("viewer")?.capabilities).toContain("registry.pull");
  });

  it("lets registry.pull_token_creator make a pull identity and bind registry.pull, and no more", async () => {
    const creator = await ts.makeIdentity(org.uid, ["registry.pull_token_creator"]);
    const c = iamOf(ts.clients(creator.headers));
    const made = await c.identities.createIdentity({
      parent: org.uid,
      identity: {
        name: "ci puller",
        method: {
          case: "claimMatch",
          value: { issuer: "https://ci.example", subject: "repo:acme/app" },
        },
      },
    });
    const bound = await c.roleBindings.createRoleBinding({
      parent: org.uid,
      roleBinding: { identityUid: made.uid, roleUid: role("registry.pull").uid },
    });
    expect(bound.role?.name).toBe("registry.pull");
    // More than it holds: viewer lists identities, which it may not.
    const more = await failure(
      c.roleBindings.createRoleBinding({
        parent: org.uid,
        roleBinding: { identityUid: made.uid, roleUid: role("viewer").uid },
      }),
    );
    expect(more.code).toBe(7);
    // A list shows what the caller may list: no identity, not even the one it made.
    const listed = await c.identities.listIdentities({});
    expect(listed.identities).toEqual([]);
    const get = await failure(c.identities.getIdentity({ uid: made.uid }));
    expect(get.code).toBe(7);
  });

  it("lets registry.push create the nested groups and repos a push names", async () => {
    const pusher = await ts.makeIdentity(org.uid, ["registry.push"]);
    const c = iamOf(ts.clients(pusher.headers));
    const nested = await c.groups.createGroup({ parent: org.uid, group: { name: "images" } });
    expect(nested.name).toBe("images");
    const bind = await failure(
      c.roleBindings.createRoleBinding({
        parent: org.uid,
        roleBinding: { identityUid: pusher.uid, roleUid: role("owner").uid },
      }),
    );
    expect(bind.code).toBe(7);
  });
});
