import { expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import type { Store } from "../../src/store/store.js";

const person = (n: number) => `${n}`.padStart(40, "p");
const hash = (s: string) => s.padEnd(43, "h");

/**
 * The sign-in upkeep part of the store contract (spent logins, unfinished sign-ins, the
 * purge); `store()` is the fresh store of the running test. Called from runStoreSuite.
 */
export function signInUpkeepCases(store: () => Store): void {
  const signUp = (n: number, now: number) =>
    store().upsertPerson({
      uid: person(n),
      issuer: "https://idp.test",
      subject: `s${n}`,
      name: `P${n}`,
      email: "",
      now,
    });
  const code = (n: number, session: string, expireTime: number, now = 0) =>
    store().createAuthorizationCode({
      codeHash: hash(`c${session}`),
      sessionId: session,
      identityUid: person(n),
      clientId: "cli",
      redirectUri: "http://127.0.0.1/cb",
      codeChallenge: "x",
      expireTime,
      now,
    });
  const redeem = (session: string, now: number, refreshExpiry: number) =>
    store().redeemAuthorizationCode(hash(`c${session}`), now, () => undefined, {
      tokenHash: hash(`r${session}`),
      expireTime: refreshExpiry,
    });

  it("spends a sealed login once", async () => {
    expect(await store().spendLogin(hash("a"), 100)).toBe(true);
    expect(await store().spendLogin(hash("a"), 100)).toBe(false);
    expect(await store().spendLogin(hash("b"), 100)).toBe(true);
    // Kept until the login's expiry, then purged: its cookie is refused by then anyway.
    expect((await store().purgeSignIns(99, 0, -1)).spentLogins).toBe(0);
    expect(await store().spendLogin(hash("a"), 100)).toBe(false);
    expect((await store().purgeSignIns(100, 0, -1)).spentLogins).toBe(2);
  });

  it("purges expired codes and refresh tokens and ended sessions, and nothing live", async () => {
    await signUp(1, 0);
    await code(1, "never-redeemed", 60);
    await code(1, "live", 60);
    expect(await redeem("live", 10, 1000)).toMatchObject({ kind: "granted" });
    await code(1, "rotated", 60);
    expect(await redeem("rotated", 10, 500)).toMatchObject({ kind: "granted" });
    const next = { tokenHash: hash("r-next"), expireTime: 2000 };
    expect(await store().rotateRefreshToken(hash("rrotated"), "cli", 20, next)).toMatchObject({
      kind: "granted",
    });
    await code(1, "revoked", 60);
    expect(await redeem("revoked", 10, 1000)).toMatchObject({ kind: "granted" });
    expect(await store().revokeSession("revoked", 30)).toMatchObject({ kind: "revoked" });

    // At 59 every code is live: only the revoked session goes.
    expect(await store().purgeSignIns(59, 0, -1)).toMatchObject({ sessions: 1, codes: 0 });
    expect(await store().sessionActive("never-redeemed")).toBe(true);
    // At 60 the unredeemed code expired: its session ends. The redeemed codes go too.
    expect(await store().purgeSignIns(60, 0, -1)).toMatchObject({ sessions: 1, codes: 2 });
    expect(await store().sessionActive("never-redeemed")).toBe(false);
    expect(await store().sessionActive("live")).toBe(true);
    // A spent refresh token stays until its expiry, so that its reuse is still caught.
    expect(await store().purgeSignIns(499, 0, -1)).toMatchObject({ refreshTokens: 0, sessions: 0 });
    expect(await store().purgeSignIns(500, 0, -1)).toMatchObject({ refreshTokens: 1, sessions: 0 });
    expect(await store().sessionActive("rotated")).toBe(true);
    // Past every refresh token's expiry, the sessions end.
    expect(await store().purgeSignIns(2000, 0, -1)).toMatchObject({ sessions: 2 });
    expect(await store().sessionActive("live")).toBe(false);
    expect(await store().sessionActive("rotated")).toBe(false);
    expect(await store().getIdentity(person(1))).toBeDefined();
  });

  it("keeps a device code until its expiry, decides and redeems it once, then purges it", async () => {
    await signUp(5, 0);
    const device = (d: string, u: string, expireTime = 600) =>
      store().createDeviceCode({
        deviceCodeHash: hash(d),
        userCodeHash: hash(u),
        clientId: "cli",
        provider: "",
        intervalMs: 1000,
        expireTime,
        now: 0,
      });
    expect(await device("d1", "u1", 100_000)).toBe(true);
    // A live user code is not handed out twice.
    expect(await device("d2", "u1")).toBe(false);
    const grant = (t: string) => ({
      sessionId: `dev-${t}`,
      refresh: { tokenHash: hash(`rt-${t}`), expireTime: 5000 },
    });
    const poll = (now: number, t = "a") => store().pollDeviceCode(hash("d1"), "cli", now, grant(t));
    expect(await poll(10)).toEqual({ kind: "pending" });
    expect(await poll(10)).toEqual({ kind: "slow_down", intervalMs: 6000 });
    expect(await store().pendingDeviceCode(hash("u1"), 20)).toMatchObject({ provider: "" });
    expect(await store().decideDeviceCode(hash("u1"), 20, person(5))).toBe(true);
    expect(await store().decideDeviceCode(hash("u1"), 21, null)).toBe(false);
    expect(await store().pendingDeviceCode(hash("u1"), 22)).toBeUndefined();
    expect(await store().pollDeviceCode(hash("d1"), "other", 6020, grant("b"))).toEqual({
      kind: "invalid",
    });
    expect(await poll(6020)).toEqual({
      kind: "granted",
      identityUid: person(5),
      sessionId: "dev-a",
    });
    expect(await store().sessionActive("dev-a")).toBe(true);
    expect(await poll(20_000, "c")).toEqual({ kind: "invalid" });
    // Expired, redeemed or not, it is purged (a session lives on by its refresh token).
    expect(await device("d3", "u3")).toBe(true);
    expect(await store().pollDeviceCode(hash("d3"), "cli", 600, grant("d"))).toEqual({
      kind: "expired",
    });
    expect((await store().purgeSignIns(599, 0, -1)).deviceCodes).toBe(0);
    expect((await store().purgeSignIns(600, 0, -1)).deviceCodes).toBe(1);
    expect((await store().purgeSignIns(100_000, 0, -1)).deviceCodes).toBe(1);
    // Its user code is free again once it expired.
    expect(await device("d4", "u3")).toBe(true);
  });

  it("finds people whose sign-in was never completed, and only them", async () => {
    // 2 signs up and never redeems a code; 3 completes; 4 existed and started again.
    for (const n of [2, 3]) {
      await signUp(n, 100);
      await store().noteUnfinishedSignIn(person(n), true, 100);
      await code(n, `s${n}`, 160, 100);
    }
    expect(await redeem("s3", 110, 10_000)).toMatchObject({ kind: "granted" });
    await signUp(4, 1);
    await signUp(4, 100);
    await store().noteUnfinishedSignIn(person(4), false, 100);
    // While a code is live the person stays.
    expect((await store().purgeSignIns(150, 150, -1)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(200, 99, -1)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(200, 100, -1)).unfinishedPeople).toEqual([person(2)]);
    // A later sign-in moves the note: the person is not found until it is old too.
    await signUp(2, 300);
    await store().noteUnfinishedSignIn(person(2), false, 300);
    expect((await store().purgeSignIns(400, 200, -1)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(400, 300, -1)).unfinishedPeople).toEqual([person(2)]);
    // Seen since the note (a token exchange), the person is in use.
    await store().touchIdentity(person(2), 350);
    expect((await store().purgeSignIns(400, 400, -1)).unfinishedPeople).toEqual([]);
    await store().deleteIdentity(person(2));
    expect((await store().purgeSignIns(400, 400, -1)).unfinishedPeople).toEqual([]);
  });

  it("finds people who hold nothing and were not seen since, and deletes only them", async () => {
    const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
    const org = "o".repeat(40);
    await store().createGroup({ uid: org, parentUid: "", name: "org", description: "", now: 1 });
    // 5 signed in and their session ended; 6 holds a binding; 7 a live session; 8 wrote a
    // provider; 9 was seen lately; 10 has a sign-in still unfinished.
    for (const n of [5, 6, 7, 8, 9, 10]) await signUp(n, 100);
    await code(5, "s5", 160, 100);
    expect(await redeem("s5", 110, 200)).toMatchObject({ kind: "granted" });
    await store().createRoleBinding({
      uid: `${org}/${"b".repeat(16)}`,
      groupUid: org,
      identityUid: person(6),
      roleUid: viewer,
      now: 100,
    });
    await code(7, "s7", 160, 100);
    expect(await redeem("s7", 110, 10_000)).toMatchObject({ kind: "granted" });
    await store().createIdentityProvider({
      uid: `${org}/${"c".repeat(16)}`,
      groupUid: org,
      name: "p",
      description: "",
      defaultRole: "",
      oidc: {
        issuer: "https://idp.test",
        clientId: "c",
        clientSecret: "",
        additionalScopes: [],
        groupsClaim: "",
      },
      writerUid: person(8),
      now: 100,
    });
    await store().touchIdentity(person(9), 2000);
    await store().noteUnfinishedSignIn(person(10), true, 100);
    const idle = async (now: number, before: number) =>
      (await store().purgeSignIns(now, -1, before)).idlePeople;
    // Not yet past the retention; then the session is still there.
    expect(await idle(150, 99)).toEqual([]);
    expect(await idle(150, 1000)).toEqual([]);
    // Past the refresh token's expiry the session goes, and 5 holds nothing.
    expect(await idle(300, 1000)).toEqual([person(5)]);
    // The deletion checks again: 6 is refused, and 5 seen meanwhile is kept.
    await expect(store().deleteIdlePerson(person(6), 1000)).rejects.toMatchObject({
      kind: "failed_precondition",
    });
    await store().touchIdentity(person(5), 1000);
    await expect(store().deleteIdlePerson(person(5), 999)).rejects.toMatchObject({
      kind: "failed_precondition",
    });
    await store().deleteIdlePerson(person(5), 1000);
    expect(await store().getIdentity(person(5))).toBeUndefined();
    for (const n of [6, 7, 8, 9, 10]) expect(await store().getIdentity(person(n))).toBeDefined();
    expect(await idle(300, 1000)).toEqual([]);
  });
}
