import { expect, it } from "vitest";
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
    expect((await store().purgeSignIns(99, 0)).spentLogins).toBe(0);
    expect(await store().spendLogin(hash("a"), 100)).toBe(false);
    expect((await store().purgeSignIns(100, 0)).spentLogins).toBe(2);
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
    expect(await store().purgeSignIns(59, 0)).toMatchObject({ sessions: 1, codes: 0 });
    expect(await store().sessionActive("never-redeemed")).toBe(true);
    // At 60 the unredeemed code expired: its session ends. The redeemed codes go too.
    expect(await store().purgeSignIns(60, 0)).toMatchObject({ sessions: 1, codes: 2 });
    expect(await store().sessionActive("never-redeemed")).toBe(false);
    expect(await store().sessionActive("live")).toBe(true);
    // A spent refresh token stays until its expiry, so that its reuse is still caught.
    expect(await store().purgeSignIns(499, 0)).toMatchObject({ refreshTokens: 0, sessions: 0 });
    expect(await store().purgeSignIns(500, 0)).toMatchObject({ refreshTokens: 1, sessions: 0 });
    expect(await store().sessionActive("rotated")).toBe(true);
    // Past every refresh token's expiry, the sessions end.
    expect(await store().purgeSignIns(2000, 0)).toMatchObject({ sessions: 2 });
    expect(await store().sessionActive("live")).toBe(false);
    expect(await store().sessionActive("rotated")).toBe(false);
    expect(await store().getIdentity(person(1))).toBeDefined();
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
    expect((await store().purgeSignIns(150, 150)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(200, 99)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(200, 100)).unfinishedPeople).toEqual([person(2)]);
    // A later sign-in moves the note: the person is not found until it is old too.
    await signUp(2, 300);
    await store().noteUnfinishedSignIn(person(2), false, 300);
    expect((await store().purgeSignIns(400, 200)).unfinishedPeople).toEqual([]);
    expect((await store().purgeSignIns(400, 300)).unfinishedPeople).toEqual([person(2)]);
    // Seen since the note (a token exchange), the person is in use.
    await store().touchIdentity(person(2), 350);
    expect((await store().purgeSignIns(400, 400)).unfinishedPeople).toEqual([]);
    await store().deleteIdentity(person(2));
    expect((await store().purgeSignIns(400, 400)).unfinishedPeople).toEqual([]);
  });
}
