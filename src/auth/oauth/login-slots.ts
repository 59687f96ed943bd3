import type { LoginCookies, PendingLogin } from "./login-cookie.js";

/** The one login cookie of a browser. */
export const loginCookieName = "gatehouse_login";
/** Sign-ins one browser may have in flight at once (tabs): a newer one drops the oldest. */
export const maxLoginsPerBrowser = 3;

/**
 * A browser's logins in flight, in its one cookie: the sealed logins (login-cookie.ts), newest
 * first, joined by "." (which base64url never holds). One cookie, of at most a browser's
 * 4,096 bytes, however many sign-ins a page makes it start: each start puts its login first
 * and keeps as many older ones as fit, up to maxLoginsPerBrowser, so that a person signing in
 * from two tabs at once finishes both, and a page that starts many sign-ins leaves one cookie.
 */
export interface LoginSlots {
  /** The cookie's value after a new login `sealed` starts, given its value now. */
  add(current: string | undefined, sealed: string): string;
  /**
   * The login of `stateHash` in the cookie's value, and the value without it ("" if none
   * is left); undefined if no sealed login in it is that login's.
   */
  take(
    current: string | undefined,
    stateHash: string,
  ): { login: PendingLogin; rest: string } | undefined;
}

/** Create the slots over `cookies`, keeping the cookie's value within `maxValueBytes`. */
export function createLoginSlots(cookies: LoginCookies, maxValueBytes: number): LoginSlots {
  const entries = (value: string | undefined) =>
    (value ?? "").split(".").filter((e) => /^[A-Za-z0-9_-]+$/.test(e));
  return {
    add(current, sealed) {
      const kept = [sealed];
      let size = sealed.length;
      for (const older of entries(current)) {
        if (kept.length >= maxLoginsPerBrowser || size + 1 + older.length > maxValueBytes) break;
        kept.push(older);
        size += 1 + older.length;
      }
      return kept.join(".");
    },
    take(current, stateHash) {
      const all = entries(current);
      for (const [i, entry] of all.entries()) {
        const login = cookies.open(stateHash, entry);
        if (login) return { login, rest: all.filter((_, j) => j !== i).join(".") };
      }
      return undefined;
    },
  };
}
