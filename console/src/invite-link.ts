// An invite's console link (`/console/#/invite/<code>`, GroupInvite.link): the code is taken
// from the fragment as the page loads, kept in this tab's sessionStorage until the person is
// signed in, then redeemed. The fragment never reaches a server (no request log, no Referer),
// and the address loses it at once, so it stays in neither the address bar nor the history.

const key = "gatehouse.console.invite";

/** Take an invite code from the address, if it carries one; call once, before rendering. */
export function takeInviteFromAddress(): void {
  const m = /^#\/invite\/([^/?#]+)$/.exec(location.hash);
  if (!m?.[1]) return;
  let code: string;
  try {
    code = decodeURIComponent(m[1]);
  } catch {
    return;
  }
  sessionStorage.setItem(key, code);
  history.replaceState(null, "", "/console/#/");
}

/** Whether an invite waits for the person to sign in. */
export function inviteWaiting(): boolean {
  return sessionStorage.getItem(key) !== null;
}

/** The waiting invite's code, removed: redeemed once, whatever the answer. */
export function takeWaitingInvite(): string | undefined {
  const code = sessionStorage.getItem(key);
  sessionStorage.removeItem(key);
  return code ?? undefined;
}
