import { expect } from "vitest";
import { type CookieJar, cookieHeaderOf, signInAtIdp } from "./test-idp.js";

// A person approving (or denying) a device flow's user code as their browser would, with
// plain HTTP: the verification page, the identity provider's login and consent, the
// confirmation page's button. The Chromium suite does the same in a real browser.

/** What the device authorization endpoint answers (RFC 8628 3.2). */
export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** POST a form to `url`; the answer's status and JSON body. */
export async function postForm(
  url: string,
  form: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** Start a device authorization at `authUrl` for the CLI's client. */
export async function startDeviceAuthorization(authUrl: string): Promise<DeviceAuthorization> {
  const answer = await postForm(`${authUrl}/oauth/device_authorization`, {
    client_id: "gatehouse-cli",
  });
  expect(answer.status).toBe(200);
  return answer.json as unknown as DeviceAuthorization;
}

/** One poll of the token endpoint with a device code. */
export function pollOnce(authUrl: string, deviceCode: string) {
  return postForm(`${authUrl}/oauth/token`, {
    grant_type: "urn:ietf:params:oauth:grant-type:device_code",
    device_code: deviceCode,
    client_id: "gatehouse-cli",
  });
}

/**
 * Type `userCode` at the verification page of `authUrl`, sign in at the identity provider as
 * `account`, and press `decision` on the confirmation page. Returns the final page's status
 * and text.
 */
export async function decideUserCode(
  authUrl: string,
  userCode: string,
  account: string,
  decision: "approve" | "deny",
): Promise<{ status: number; html: string }> {
  const confirm = await confirmationPage(authUrl, userCode, account);
  const ticket = /name="ticket" value="([^"]+)"/.exec(confirm)?.[1];
  if (!ticket) throw new Error(`no confirmation form: ${confirm.slice(0, 500)}`);
  const res = await fetch(`${authUrl}/oauth/device/confirm`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ticket, decision }),
  });
  return { status: res.status, html: await res.text() };
}

/** Enter `userCode`, sign in as `account`: the confirmation page's HTML. */
export async function confirmationPage(
  authUrl: string,
  userCode: string,
  account: string,
): Promise<string> {
  const jar: CookieJar = new Map();
  const entry = new URL(`${authUrl}/oauth/device`);
  const res = await fetch(entry, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ user_code: userCode }),
  });
  if (res.status !== 302) throw new Error(`code entry answered ${res.status}: ${await res.text()}`);
  const cookies = new Map<string, string>();
  for (const line of res.headers.getSetCookie()) {
    const [pair = ""] = line.split(";", 1);
    const eq = pair.indexOf("=");
    cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  jar.set(entry.host, cookies);
  const callback = await signInAtIdp(
    res.headers.get("location") as string,
    account,
    `${authUrl}/oauth/callback`,
    jar,
  );
  const page = await fetch(callback, { headers: { cookie: cookieHeaderOf(jar, callback) } });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`callback answered ${page.status}: ${html}`);
  return html;
}
