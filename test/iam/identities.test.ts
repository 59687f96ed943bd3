import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { exportJWK, generateKeyPair } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { failure } from "../helpers/connect-errors.js";
import type { IamClients } from "../helpers/iam-clients.js";
import { iamOf, useInMemory } from "../helpers/in-memory.js";
import type { TestOrg } from "../helpers/test-orgs.js";

const day = 24 * 3_600_000;
const viewer = builtinRoles.find((r) => r.name === "viewer")!;

let org: TestOrg;
let jwks: string | undefined;
let privateJwks: string;

const ts = useInMemory();
beforeAll(async () => {
  org = await ts.makeOrg("identities");
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1" }] });
  privateJwks = JSON.stringify({ keys: [await exportJWK(privateKey)] });
});

const claimMatch = (over: Record<string, unknown> = {}) => ({
  case: "claimMatch" as const,
  value: { issuer: "https://ci.test", subjectPattern: "repo:acme/.*", ...over },
});
const staticKeys = (over: Record<string, unknown> = {}) => ({
  case: "staticKeys" as const,
  value: { issuer: "https://offline.test", subject: "job", issuerKeys: jwks ?? "PUBLIC", ...over },
});

describe.each(["memory"])("identities in %s", (protocol) => {
  let c: IamClients;
  let group: string;
  beforeAll(async () => {
    c = iamOf(ts.clients(org.owner.headers));
    group = (await c.groups.createGroup({ parent: org.uid, group: { name: `ids-${protocol}` } }))
      .uid;
  });

  it("creates, reads, lists with paging, updates and deletes", async () => {
    const created = await c.identities.createIdentity({
      parent: group,
      identity: { name: "ci", description: "builds", method: claimMatch() },
    });
    expect(created.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(created).toMatchObject({ name: "ci", description: "builds", email: "" });
    expect(created.method).toMatchObject({
      case: "claimMatch",
      value: { issuer: "https://ci.test", subjectPattern: "repo:acme/.*" },
    });
    expect(created.lastSeenTime).toEqual(created.createTime);
    expect(await c.identities.getIdentity({ uid: created.uid })).toEqual(created);

    for (const name of ["deploy", "audit"]) {
      await c.identities.createIdentity({
        parent: group,
        identity: { name, method: claimMatch() },
      });
    }
    const first = await c.identities.listIdentities({
      uidp: { childrenOf: group, descendantsOf: "" },
      pageSize: 2,
      orderBy: "name",
    });
    expect(first.identities.map((i) => i.name)).toEqual(["audit", "ci"]);
    expect(first.totalCount).toBe(3n);
    const second = await c.identities.listIdentities({
      uidp: { childrenOf: group, descendantsOf: "" },
      pageSize: 2,
      orderBy: "name",
      pageToken: first.nextPageToken ?? "",
    });
    expect(second.identities.map((i) => i.name)).toEqual(["deploy"]);
    expect(second.nextPageToken).toBeUndefined();

    // No mask: the fields present change.
    const described = await c.identities.updateIdentity({
      identity: { uid: created.uid, description: "ships" },
    });
    expect(described).toMatchObject({ name: "ci", description: "ships" });
    expect(described.method.case).toBe("claimMatch");
    // A mask: only its fields change.
    const renamed = await c.identities.updateIdentity({
      identity: { uid: created.uid, name: "ci2", description: "ignored" },
      updateMask: { paths: ["name"] },
    });
    expect(renamed).toMatchObject({ name: "ci2", description: "ships" });
    // Switching method replaces the other one.
    const switched = await c.identities.updateIdentity({
      identity: { uid: created.uid, method: staticKeys() },
    });
    expect(switched.method.case).toBe("staticKeys");

    await c.identities.deleteIdentity({ uid: created.uid });
    const gone = await failure(c.identities.getIdentity({ uid: created.uid }));
    expect(gone).toMatchObject({ code: 5, reason: "NOT_FOUND" });
    expect(await failure(c.identities.deleteIdentity({ uid: created.uid }))).toMatchObject({
      code: 5,
    });
  });

  it("defaults static keys to expire 365 days after creation", async () => {
    const created = await c.identities.createIdentity({
      parent: group,
      identity: { name: "offline", method: staticKeys() },
    });
    if (created.method.case !== "staticKeys") throw new Error("expected staticKeys");
    const expires = timestampDate(created.method.value.expirationTime!).getTime();
    expect(expires - timestampDate(created.createTime!).getTime()).toBe(365 * day);
  });

  it("removes the bindings of a deleted identity", async () => {
    const id = await c.identities.createIdentity({
      parent: group,
      identity: { name: "bound", method: claimMatch() },
    });
    await c.roleBindings.createRoleBinding({
      parent: group,
      roleBinding: { identityUid: id.uid, roleUid: viewer.uid },
    });
    const list = () =>
      c.roleBindings.listRoleBindings({ identity: id.uid }).then((r) => r.totalCount);
    expect(await list()).toBe(1n);
    await c.identities.deleteIdentity({ uid: id.uid });
    expect(await list()).toBe(0n);
  });

  const now = Date.now();
  // [case, identity body, the fields reported]
  const invalid: [string, Record<string, unknown>, string[]][] = [
    ["no name", { name: "", method: claimMatch() }, ["name"]],
    ["a name too long", { name: "x".repeat(257), method: claimMatch() }, ["name"]],
    ["a control character", { name: "a\u0007b", method: claimMatch() }, ["name"]],
    [
      "a description too long",
      { name: "n", description: "d".repeat(513), method: claimMatch() },
      ["description"],
    ],
    ["no method", { name: "n" }, ["claimMatch"]],
    [
      "issuer and issuerPattern",
      { name: "n", method: claimMatch({ issuerPattern: ".*" }) },
      ["claimMatch.issuer"],
    ],
    [
      "no subject",
      { name: "n", method: claimMatch({ subjectPattern: "" }) },
      ["claimMatch.subject"],
    ],
    ["no issuer at all", { name: "n", method: claimMatch({ issuer: "" }) }, ["claimMatch.issuer"]],
    [
      "a pattern that does not compile",
      { name: "n", method: claimMatch({ subjectPattern: "(" }) },
      ["claimMatch.subjectPattern"],
    ],
    [
      "audience and audiencePattern",
      { name: "n", method: claimMatch({ audience: "a", audiencePattern: "b" }) },
      ["claimMatch.audience"],
    ],
    [
      "a bad claim pattern",
      { name: "n", method: claimMatch({ claimPatterns: { ref: "[" } }) },
      ["claimMatch.claimPatterns[ref]"],
    ],
    [
      "static keys without issuer and subject",
      { name: "n", method: staticKeys({ issuer: "", subject: "" }) },
      ["staticKeys.issuer", "staticKeys.subject"],
    ],
    [
      "issuerKeys that are not JSON",
      { name: "n", method: staticKeys({ issuerKeys: "nope" }) },
      ["staticKeys.issuerKeys"],
    ],
    [
      "issuerKeys with an empty set",
      { name: "n", method: staticKeys({ issuerKeys: '{"keys":[]}' }) },
      ["staticKeys.issuerKeys"],
    ],
    [
      "issuerKeys with a private key",
      { name: "n", method: staticKeys({ issuerKeys: "PRIVATE" }) },
      ["staticKeys.issuerKeys"],
    ],
    [
      "issuerKeys with no usable key",
      {
        name: "n",
        method: staticKeys({
          issuerKeys: '{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}',
        }),
      },
      ["staticKeys.issuerKeys"],
    ],
    [
      "expiration beyond 365 days",
      { name: "n", method: staticKeys({ expirationTime: timestampFromMs(now + 400 * day) }) },
      ["staticKeys.expirationTime"],
    ],
    [
      "expiration in the past",
      { name: "n", method: staticKeys({ expirationTime: timestampFromMs(now - day) }) },
      ["staticKeys.expirationTime"],
    ],
  ];

  it.each(invalid)("rejects %s", async (_case, body, fields) => {
    const identity = structuredClone(body) as { method?: { value: Record<string, unknown> } };
    // The table is built before the keys exist: put them in now.
    const keys = identity.method?.value;
    if (keys?.issuerKeys === "PUBLIC") keys.issuerKeys = jwks;
    if (keys?.issuerKeys === "PRIVATE") keys.issuerKeys = privateJwks;
    const err = await failure(c.identities.createIdentity({ parent: group, identity } as never));
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", fields });
    expect(err.message).toMatch(new RegExp(`^Invalid argument: ${escapeRegExp(fields[0]!)}: `));
  });

  it("rejects an update naming one method while carrying the other", async () => {
    const id = await c.identities.createIdentity({
      parent: group,
      identity: { name: "m", method: claimMatch() },
    });
    const err = await failure(
      c.identities.updateIdentity({
        identity: { uid: id.uid, method: staticKeys() },
        updateMask: { paths: ["claim_match"] },
      }),
    );
    expect(err).toMatchObject({ code: 3, fields: ["staticKeys"] });
    const unknown = await failure(
      c.identities.updateIdentity({ identity: { uid: id.uid }, updateMask: { paths: ["nope"] } }),
    );
    expect(unknown).toMatchObject({ code: 3, fields: ["update_mask"] });
  });

  it("answers NOT_FOUND for a missing parent group the caller may act in", async () => {
    const err = await failure(
      c.identities.createIdentity({
        parent: `${org.uid}/0000000000000000`,
        identity: { name: "n", method: claimMatch() },
      }),
    );
    expect(err).toMatchObject({ code: 5, reason: "NOT_FOUND" });
  });

  it("lets every caller read its own identity, and no one else's without a binding", async () => {
    // A person's identity lives in no group: only the person may read it.
    const me = await c.identities.getIdentity({ uid: org.owner.uid });
    expect(me).toMatchObject({ uid: org.owner.uid, name: expect.stringMatching(/^Person /) });
    const other = await ts.makeOrg(`other-${protocol}`);
    const asOther = iamOf(ts.clients(other.owner.headers));
    expect(await failure(asOther.identities.getIdentity({ uid: org.owner.uid }))).toMatchObject({
      code: 7,
    });
    // A workload bound to nothing reads itself, not its sibling.
    const lone = await ts.makeIdentity(group);
    const sibling = await ts.makeIdentity(group);
    const asLone = iamOf(ts.clients(lone.headers));
    expect((await asLone.identities.getIdentity({ uid: lone.uid })).uid).toBe(lone.uid);
    expect(await failure(asLone.identities.getIdentity({ uid: sibling.uid }))).toMatchObject({
      code: 7,
    });
    // Reading oneself grants nothing else.
    expect(
      await failure(asLone.identities.updateIdentity({ identity: { uid: lone.uid, name: "x" } })),
    ).toMatchObject({ code: 7 });
  });
});

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
