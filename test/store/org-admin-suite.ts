import { beforeEach, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { OidcRecord } from "../../src/store/iam-store.js";
import type { Store } from "../../src/store/store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "c".repeat(40);
const G = `${R}/1111111111111111`;
const H = `${G}/2222222222222222`;
const OTHER = "d".repeat(40);
const viewer = builtinRoles.find((r) => r.name === "viewer")!;

const oidc: OidcRecord = {
  issuer: "https://idp.test",
  clientId: "gatehouse",
  clientSecret: "s3cret",
  additionalScopes: ["groups"],
  groupsClaim: "groups",
};

/**
 * The identity-provider and account-association part of the store contract; `store()` is the
 * fresh store of the running test. Called from runStoreSuite.
 */
export function orgAdminCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.createGroup({ uid: H, parentUid: G, name: "api", description: "", now: 1 });
    await s.createGroup({ uid: OTHER, parentUid: "", name: "other", description: "", now: 1 });
  });

  const provider = (uid: string, groupUid: string, name: string, now = 10) =>
    store().createIdentityProvider({
      uid,
      groupUid,
      name,
      description: "",
      defaultRole: viewer.uid,
      oidc,
      writerUid: "w".repeat(40),
      now,
    });

  describe("identity providers", () => {
    const P1 = `${G}/000000000000000a`;

    it("creates, reads, updates and deletes a provider, keeping its secret", async () => {
      const created = await provider(P1, G, "corp");
      expect(created).toEqual({
        uid: P1,
        groupUid: G,
        name: "corp",
        description: "",
        defaultRole: viewer.uid,
        oidc,
        writerUid: "w".repeat(40),
        emailDomains: [],
        groupMappings: [],
        createTime: 10,
        updateTime: 10,
      });
      expect(await store().getIdentityProvider(P1)).toEqual(created);
      const described = await store().updateIdentityProvider(P1, { description: "d" }, 11);
      expect(described).toMatchObject({ name: "corp", description: "d", oidc, updateTime: 11 });
      expect(described.writerUid).toBe("w".repeat(40));
      const rewritten = await store().updateIdentityProvider(P1, { writerUid: "v".repeat(40) }, 11);
      expect(rewritten.writerUid).toBe("v".repeat(40));
      expect((await store().getIdentityProvider(P1))?.writerUid).toBe("v".repeat(40));
      const rotated = { ...oidc, clientSecret: "new", additionalScopes: [] };
      const changed = await store().updateIdentityProvider(P1, { oidc: rotated }, 12);
      expect(changed.oidc).toEqual(rotated);
      await store().deleteIdentityProvider(P1);
      expect(await store().getIdentityProvider(P1)).toBeUndefined();
      await storeError(() => store().deleteIdentityProvider(P1), "not_found");
      await storeError(() => store().updateIdentityProvider(P1, {}, 1), "not_found");
    });

    it("finds providers by a declared email domain, oldest first, bounded", async () => {
      const P2 = `${H}/000000000000000b`;
      const P3 = `${OTHER}/000000000000000c`;
      const declare = (uid: string, group: string, name: string, now: number, d: string[]) =>
        store().createIdentityProvider({
          uid,
          groupUid: group,
          name,
          description: "secret-ish",
          defaultRole: viewer.uid,
          oidc,
          emailDomains: d,
          writerUid: "w".repeat(40),
          now,
        });
      const made = await declare(P1, G, "corp", 10, ["acme.com", "acme.io"]);
      expect(made.emailDomains).toEqual(["acme.com", "acme.io"]);
      expect(await store().getIdentityProvider(P1)).toEqual(made);
      await declare(P3, OTHER, "squatter", 30, ["acme.com"]);
      await declare(P2, H, "api", 20, ["acme.com"]);
      const find = (d: string, n = 10, perOrg = 10) =>
        store().findIdentityProvidersByDomain(d, n, perOrg);
      const acme = (uid: string, name: string) => ({
        uid,
        name,
        organization: "acme",
        verified: false,
      });
      const squatter = { uid: P3, name: "squatter", organization: "other", verified: false };
      // Uid, name and organization; the earliest declaration first, whatever the uid order.
      expect(await find("acme.com")).toEqual([acme(P1, "corp"), acme(P2, "api"), squatter]);
      expect(await find("acme.com", 2)).toEqual([acme(P1, "corp"), acme(P2, "api")]);
      // At most perOrg of one organization: the other's claim is not pushed out.
      expect(await find("acme.com", 10, 1)).toEqual([acme(P1, "corp"), squatter]);
      expect(await find("acme.io")).toEqual([acme(P1, "corp")]);
      expect(await find("other.com")).toEqual([]);
      // A change of the list moves the index with it; other changes keep it.
      const moved = await store().updateIdentityProvider(
        P1,
        { emailDomains: ["corp.example", "acme.com"] },
        40,
      );
      expect(moved.emailDomains).toEqual(["corp.example", "acme.com"]);
      await store().updateIdentityProvider(P1, { description: "kept" }, 41);
      expect(await find("acme.io")).toEqual([]);
      expect(await find("corp.example")).toEqual([acme(P1, "corp")]);
      // A domain kept through a change keeps its claim time: still first.
      expect((await find("acme.com"))[0]).toEqual(acme(P1, "corp"));
      // One dropped and claimed again is claimed anew: last.
      await store().updateIdentityProvider(P1, { emailDomains: ["corp.example"] }, 42);
      await store().updateIdentityProvider(P1, { emailDomains: ["acme.com"] }, 43);
      expect(await find("acme.com")).toEqual([acme(P2, "api"), squatter, acme(P1, "corp")]);
      expect((await store().getIdentityProvider(P1))?.emailDomains).toEqual(["acme.com"]);
      // Deleting a provider takes its domains with it.
      await store().deleteIdentityProvider(P2);
      await store().deleteIdentityProvider(P1);
      expect(await find("acme.com")).toEqual([squatter]);
    });

    it("finds providers by name, oldest name first, at most perOrg of one organization", async () => {
      const P2 = `${H}/000000000000000b`;
      const P3 = `${OTHER}/000000000000000c`;
      const P4 = `${OTHER}/000000000000000d`;
      await provider(P1, G, "corp sso", 10);
      // An older provider renamed to the name claims it when renamed, not when it was made.
      await provider(P3, OTHER, "old", 5);
      await provider(P2, H, "corp sso", 20);
      await store().updateIdentityProvider(P3, { name: "corp sso" }, 30);
      await provider(P4, OTHER, "corp sso", 25);
      const find = (n: string, limit = 10, perOrg = 10) =>
        store().findIdentityProvidersByName(n, limit, perOrg);
      const of = (uid: string, name: string, organization: string) => ({
        uid,
        name,
        organization,
        verified: false,
      });
      expect(await find("corp sso")).toEqual([
        of(P1, "corp sso", "acme"),
        of(P2, "corp sso", "acme"),
        of(P4, "corp sso", "other"),
        of(P3, "corp sso", "other"),
      ]);
      // Keeping the name keeps its claim time.
      await store().updateIdentityProvider(P1, { name: "corp sso", description: "x" }, 50);
      expect(await find("corp sso", 10, 1)).toEqual([
        of(P1, "corp sso", "acme"),
        of(P4, "corp sso", "other"),
      ]);
      expect(await find("corp")).toEqual([]);
    });

    it("refuses a missing group and a taken uid", async () => {
      await storeError(
        () => provider(`${"e".repeat(40)}/000000000000000a`, "e".repeat(40), "x"),
        "not_found",
      );
      await provider(P1, G, "corp");
      await storeError(() => provider(P1, G, "again"), "already_exists");
    });

    it("lists by tree, name and scope", async () => {
      await provider(`${R}/000000000000000a`, R, "root", 10);
      await provider(`${G}/000000000000000b`, G, "eng", 11);
      await provider(`${H}/000000000000000c`, H, "api", 12);
      await provider(`${OTHER}/000000000000000d`, OTHER, "other", 13);
      const names = async (q: Parameters<Store["listIdentityProviders"]>[0]) =>
        (await store().listIdentityProviders(q)).items.map((p) => p.name);
      expect(await names(listQuery())).toEqual(["root", "eng", "api", "other"]);
      expect(await names(listQuery({ descendantsOf: G }))).toEqual(["eng", "api"]);
      expect(await names(listQuery({ childrenOf: G }))).toEqual(["eng"]);
      expect(await names(listQuery({ scope: [H, OTHER] }))).toEqual(["api", "other"]);
      expect(await names(listQuery({ name: "eng" }))).toEqual(["eng"]);
      const page = await store().listIdentityProviders(listQuery({ limit: 2 }));
      expect(page).toMatchObject({ total: 4, hasMore: true });
      // An organization's count takes in every group of it, and no other organization's.
      expect(await store().countIdentityProviders(R)).toBe(3);
      expect(await store().countIdentityProviders(OTHER)).toBe(1);
      expect(await store().countIdentityProviders("e".repeat(40))).toBe(0);
    });

    it("blocks the delete of its group", async () => {
      await provider(`${H}/000000000000000c`, H, "api");
      const err = await storeError(() => store().deleteGroup(H), "not_empty");
      expect(err.childKind).toBe("identityProviders");
    });
  });

  describe("account associations", () => {
    const links = {
      amazon: { account: "123456789012" },
      github: { installationIds: ["42", "9007199254740993"] },
    };

    it("creates, reads, updates and deletes the association of a group", async () => {
      const created = await store().createAccountAssociation({
        uid: G,
        name: "eng",
        description: "",
        ...links,
        now: 10,
      });
      expect(created).toEqual({
        uid: G,
        name: "eng",
        description: "",
        ...links,
        createTime: 10,
        updateTime: 10,
      });
      expect(await store().getAccountAssociation(G)).toEqual(created);
      const azure = { tenantId: "0b9e1c2a-3f4d-4e5f-8a6b-7c8d9e0f1a2b", clientIds: [] };
      const changed = await store().updateAccountAssociation(
        G,
        { azure, amazon: null, description: "d" },
        11,
      );
      expect(changed).toEqual({
        uid: G,
        name: "eng",
        description: "d",
        azure,
        github: links.github,
        createTime: 10,
        updateTime: 11,
      });
      await store().deleteAccountAssociation(G);
      expect(await store().getAccountAssociation(G)).toBeUndefined();
      await storeError(() => store().deleteAccountAssociation(G), "not_found");
      await storeError(() => store().updateAccountAssociation(G, {}, 1), "not_found");
    });

    it("allows one per group, and only for an existing group", async () => {
      const a = { name: "", description: "", ...links, now: 10 };
      await store().createAccountAssociation({ uid: G, ...a });
      await storeError(() => store().createAccountAssociation({ uid: G, ...a }), "already_exists");
      await storeError(
        () => store().createAccountAssociation({ uid: `${G}/ffffffffffffffff`, ...a }),
        "not_found",
      );
    });

    it("lists by tree, counting a group's own association as in it", async () => {
      for (const [uid, name, now] of [
        [R, "root", 10],
        [G, "eng", 11],
        [H, "api", 12],
        [OTHER, "other", 13],
      ] as const) {
        await store().createAccountAssociation({ uid, name, description: "", ...links, now });
      }
      const names = async (q: Parameters<Store["listAccountAssociations"]>[0]) =>
        (await store().listAccountAssociations(q)).items.map((p) => p.name);
      expect(await names(listQuery())).toEqual(["root", "eng", "api", "other"]);
      expect(await names(listQuery({ descendantsOf: G }))).toEqual(["eng", "api"]);
      expect(await names(listQuery({ childrenOf: G }))).toEqual(["eng"]);
      expect(await names(listQuery({ scope: [G] }))).toEqual(["eng", "api"]);
      expect(await names(listQuery({ scope: [] }))).toEqual([]);
      const first = await store().listAccountAssociations(listQuery({ limit: 3 }));
      expect(first).toMatchObject({ total: 4, hasMore: true });
    });

    it("goes with its group", async () => {
      await store().createAccountAssociation({
        uid: H,
        name: "",
        description: "",
        ...links,
        now: 1,
      });
      await store().deleteGroup(H);
      expect(await store().getAccountAssociation(H)).toBeUndefined();
      await store().createGroup({ uid: H, parentUid: G, name: "api", description: "", now: 2 });
      expect(await store().getAccountAssociation(H)).toBeUndefined();
    });
  });
}
