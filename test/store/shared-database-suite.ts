import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { type Store, StoreError } from "../../src/store/store.js";
import { newChildUid, newRootUid } from "../../src/uid.js";

/** Two stores opened on one database, as two server processes (replicas) would have. */
export interface SharedDatabase {
  a: Store;
  b: Store;
  dispose(): Promise<void>;
}

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const hash = (s: string) => createHash("sha256").update(s).digest("base64url");

/** What settled: the number that succeeded and the kinds of the StoreErrors of the rest. */
async function race(...ops: Promise<unknown>[]): Promise<{ ok: number; failed: string[] }> {
  const settled = await Promise.allSettled(ops);
  const failed = settled
    .filter((s): s is PromiseRejectedResult => s.status === "rejected")
    .map((s) => (s.reason instanceof StoreError ? s.reason.kind : String(s.reason)));
  return { ok: settled.length - failed.length, failed };
}

/**
 * The store contract across connections: every backend must keep it when several stores (one
 * per replica) share a database. What one writes the other reads at once, secrets and keys
 * agree, cached access answers follow the other's writes, and every invariant that a check
 * guards holds when two stores race on it: exactly one wins.
 */
export function runSharedDatabaseSuite(
  name: string,
  open: () => Promise<SharedDatabase>,
  opts: {
    /**
     * How long a cached access answer of one store may lag another's commit: 0 for a backend
     * that checks before every lookup (SQLite), the documented bound for one that is told by a
     * change feed (PostgreSQL).
     */
    accessLagMs: number;
  },
): void {
  /** Wait until `check` answers `want`, for at most the backend's lag (at once for 0). */
  async function settles<T>(check: () => Promise<T>, want: T): Promise<void> {
    const deadline = Date.now() + opts.accessLagMs;
    for (;;) {
      const got = await check();
      if (got === want || Date.now() >= deadline) {
        expect(got).toBe(want);
        return;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  describe(`store contract across two stores: ${name}`, () => {
    let db: SharedDatabase;
    let a: Store;
    let b: Store;
    beforeEach(async () => {
      db = await open();
      ({ a, b } = db);
    });
    afterEach(async () => {
      await db.dispose();
    });

    async function org(store: Store) {
      const person = await store.upsertPerson({
        uid: newRootUid(),
        issuer: "https://users.test",
        subject: randomBytes(8).toString("hex"),
        name: "p",
        email: "",
        now: 1,
      });
      const uid = newRootUid();
      const bindingUid = newChildUid(uid);
      await store.createOrganization(
        { uid, name: "org", description: "", now: 1 },
        { bindingUid, identityUid: person.uid, roleUid: ownerRole.uid },
      );
      return { uid, owner: person.uid, ownerBinding: bindingUid };
    }

    it("reads at once what the other wrote", async () => {
      const o = await org(a);
      expect((await b.getGroup(o.uid))?.name).toBe("org");
      await b.updateGroup(o.uid, { name: "renamed" }, 2);
      expect((await a.getGroup(o.uid))?.name).toBe("renamed");
    });

    it("agrees on secrets and signing keys", async () => {
      const [sa, sb] = await Promise.all([
        a.getOrCreateSecret("page-token-key", () => randomBytes(32)),
        b.getOrCreateSecret("page-token-key", () => randomBytes(32)),
      ]);
      expect(Buffer.compare(sa, sb)).toBe(0);
      await a.addSigningKey({ kid: "k1", privateJwk: "{}", publicJwk: "{}", createTime: 1 });
      expect((await b.listSigningKeys()).map((k) => k.kid)).toContain("k1");
    });

    it("answers access questions from the other's latest writes (revocation included)", async () => {
      const o = await org(a);
      const team = newChildUid(o.uid);
      await a.createGroup({ uid: team, parentUid: o.uid, name: "t", description: "", now: 1 });
      const id = await a.createIdentity({
        uid: newChildUid(o.uid),
        groupUid: o.uid,
        name: "w",
        description: "",
        claimMatch: {
          issuer: "https://ci.test",
          issuerPattern: "",
          subject: "w",
          subjectPattern: "",
          audience: "",
          audiencePattern: "",
          claims: {},
          claimPatterns: {},
        },
        now: 1,
      });
      const binding = newChildUid(o.uid);
      await a.createRoleBinding({
        uid: binding,
        groupUid: o.uid,
        identityUid: id.uid,
        roleUid: viewer.uid,
        now: 1,
      });
      const viewing = async () =>
        (await b.capabilitiesAt(id.uid, [o.uid, team])).has("groups.list");
      await settles(viewing, true);
      await a.deleteRoleBinding(binding);
      await settles(viewing, false);
      await a.deleteIdentity(id.uid);
      await settles(() => b.identityExists(id.uid), false);
    });

    it("the last two owner bindings deleted at once from two stores: exactly one goes", async () => {
      const o = await org(a);
      const second = await a.upsertPerson({
        uid: newRootUid(),
        issuer: "https://users.test",
        subject: "second",
        name: "s",
        email: "",
        now: 1,
      });
      const secondBinding = newChildUid(o.uid);
      await a.createRoleBinding({
        uid: secondBinding,
        groupUid: o.uid,
        identityUid: second.uid,
        roleUid: ownerRole.uid,
        now: 1,
      });
      const r = await race(a.deleteRoleBinding(o.ownerBinding), b.deleteRoleBinding(secondBinding));
      expect(r).toEqual({ ok: 1, failed: ["failed_precondition"] });
      const left = await a.listRoleBindings({
        filters: { group: o.uid },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      });
      expect(left.items.filter((x) => x.roleUid === ownerRole.uid)).toHaveLength(1);
    });

    it("expired bindings swept by two stores at once: each is reported expired exactly once", async () => {
      const o = await org(a);
      const uids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const id = await a.createIdentity({
          uid: newChildUid(o.uid),
          groupUid: o.uid,
          name: `temp-${i}`,
          description: "",
          claimMatch: {
            issuer: "https://ci.test",
            issuerPattern: "",
            subject: `temp-${i}`,
            subjectPattern: "",
            audience: "",
            audiencePattern: "",
            claims: {},
            claimPatterns: {},
          },
          now: 1,
        });
        const uid = newChildUid(o.uid);
        // Expired long ago by the stores' clocks: granting nothing, though still a row.
        await a.createRoleBinding({
          uid,
          groupUid: o.uid,
          identityUid: id.uid,
          roleUid: viewer.uid,
          now: 1,
          expireTime: 1000,
        });
        expect((await b.capabilitiesAt(id.uid, [o.uid])).has("groups.list")).toBe(false);
        uids.push(uid);
      }
      const due = await b.expiredRoleBindings(2000, 100);
      expect(uids.every((u) => due.includes(u))).toBe(true);
      // Not yet due at its expiry's eve: a binding expiring at 1000 is untouched at 999.
      expect((await a.expireRoleBinding(uids[0]!, 999)).kind).toBe("absent");
      const results = await Promise.all(
        uids.flatMap((u) => [a.expireRoleBinding(u, 2000), b.expireRoleBinding(u, 2000)]),
      );
      const expired = results.filter((r) => r.kind === "expired");
      expect(expired).toHaveLength(uids.length);
      expect(new Set(expired.map((r) => (r.kind === "expired" ? r.binding.uid : ""))).size).toBe(
        uids.length,
      );
      const left = await a.expiredRoleBindings(2000, 100);
      expect(left.filter((u) => uids.includes(u))).toEqual([]);
    });

    it("two siblings of one name created at once: exactly one is", async () => {
      const o = await org(a);
      const make = (store: Store) =>
        store.createGroup({
          uid: newChildUid(o.uid),
          parentUid: o.uid,
          name: "same",
          description: "",
          now: 1,
        });
      expect(await race(make(a), make(b))).toEqual({ ok: 1, failed: ["already_exists"] });
    });

    it("a group deleted while a child is created under it: never an orphan", async () => {
      const o = await org(a);
      const parent = newChildUid(o.uid);
      await a.createGroup({ uid: parent, parentUid: o.uid, name: "p", description: "", now: 1 });
      const child = newChildUid(parent);
      const r = await race(
        a.deleteGroup(parent),
        b.createGroup({ uid: child, parentUid: parent, name: "c", description: "", now: 1 }),
      );
      expect(r.ok).toBe(1);
      const parentLeft = await a.getGroup(parent);
      const childLeft = await a.getGroup(child);
      // Either the delete won (no child was made) or the create did (the parent stays).
      expect(parentLeft === undefined ? childLeft === undefined : parentLeft.uid === parent).toBe(
        true,
      );
    });

    it("one refresh token used at once through two stores: one rotation, the session revoked", async () => {
      const o = await org(a);
      await a.createAuthorizationCode({
        codeHash: hash("code"),
        sessionId: "s1",
        identityUid: o.owner,
        clientId: "gatehouse-cli",
        redirectUri: "http://127.0.0.1:1/cb",
        codeChallenge: "c",
        expireTime: Date.now() + 60_000,
        now: Date.now(),
      });
      const granted = await a.redeemAuthorizationCode(hash("code"), Date.now(), () => undefined, {
        tokenHash: hash("rt1"),
        expireTime: Date.now() + 60_000,
      });
      expect(granted.kind).toBe("granted");
      const rotate = (store: Store, next: string) =>
        store.rotateRefreshToken(hash("rt1"), "gatehouse-cli", Date.now(), {
          tokenHash: hash(next),
          expireTime: Date.now() + 60_000,
        });
      const [x, y] = await Promise.all([rotate(a, "rt2a"), rotate(b, "rt2b")]);
      expect([x.kind, y.kind].sort()).toEqual(["granted", "replayed"]);
      // A reuse revokes the whole session: the winner's new token is refused too.
      expect(await a.sessionActive("s1")).toBe(false);
    });

    it("refuses every call once closed", async () => {
      await a.close();
      await expect(a.getGroup(newRootUid())).rejects.toMatchObject({ kind: "unavailable" });
      await expect(
        a.createGroup({ uid: newRootUid(), parentUid: "", name: "x", description: "", now: 1 }),
      ).rejects.toMatchObject({ kind: "unavailable" });
      // The other store is unaffected.
      expect(await b.getGroup(newRootUid())).toBeUndefined();
    });
  });
}
