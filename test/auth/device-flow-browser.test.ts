import * as client from "openid-client";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { personUid } from "../../src/auth/login/person.js";
import {
  axeViolations,
  browserAvailable,
  screenshotOnFailure,
  sharedBrowser,
} from "../helpers/browser.js";
import { restCall } from "../helpers/rest-client.js";
import { startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.js";

// The device flow (RFC 8628) with a person in Chromium: openid-client's device-flow client
// polls while the person opens the verification link, signs in at the real OpenID Provider
// and presses Approve (or Deny) on Gatehouse's confirmation page.

describe.runIf(browserAvailable())("the device flow in Chromium", { timeout: 90_000 }, () => {
  let idp: TestIdp;
  let gh: TestServer;
  let browser: Browser;
  let page: Page | undefined;

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: { alice: { name: "Alice", email: "alice@example.com", email_verified: true } },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_DEVICE_CODE_INTERVAL: "1s",
      },
      { port },
    );
    browser = await sharedBrowser();
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === "fail") await screenshotOnFailure(page, ctx.task.name);
    await page?.context().close();
    page = undefined;
  });

  // The worker's browser stays open; each test closes its context (afterEach).
  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  const oidcClient = () =>
    client.discovery(new URL(gh.url), "gatehouse-cli", undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });

  /** Open the link, check the code shown, continue, and sign in at the provider as alice. */
  async function signInFor(started: client.DeviceAuthorizationResponse): Promise<Page> {
    const p = await (await browser.newContext()).newPage();
    page = p;
    await p.goto(started.verification_uri_complete as string);
    const code = p.getByLabel("Enter the code your device shows");
    expect(await code.inputValue()).toBe(started.user_code);
    expect(await axeViolations(p)).toEqual([]);
    await p.getByRole("button", { name: "Continue" }).click();
    await p.locator("input[name=login]").fill("alice");
    await p.locator("input[name=password]").fill("any");
    await p.locator("button[type=submit]").click();
    await p.getByRole("button", { name: "Continue" }).click();
    await p.getByRole("heading", { name: "Sign in a device?" }).waitFor();
    expect(await p.textContent("main")).toContain(started.user_code);
    expect(await axeViolations(p)).toEqual([]);
    return p;
  }

  it("signs the device in once the person approves in the browser", async () => {
    const config = await oidcClient();
    const started = await client.initiateDeviceAuthorization(config, {});
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    const p = await signInFor(started);
    await p.getByRole("button", { name: "Approve" }).click();
    await p.getByRole("heading", { name: "Device signed in" }).waitFor();
    const tokens = await polling;
    const me = await restCall(gh.url, "GET", "/iam/v2beta1/caller", undefined, {
      authorization: `Bearer ${tokens.access_token}`,
    });
    expect(me.json.identity.uid).toBe(personUid(idp.issuer, "alice"));
  });

  it("answers access_denied to the device when the person denies in the browser", async () => {
    const config = await oidcClient();
    const started = await client.initiateDeviceAuthorization(config, {});
    const polling = client.pollDeviceAuthorizationGrant(config, started).then(
      () => "granted",
      (err: unknown) => (err as { error?: string }).error,
    );
    const p = await signInFor(started);
    await p.getByRole("button", { name: "Deny" }).click();
    await p.getByRole("heading", { name: "Sign-in denied" }).waitFor();
    expect(await polling).toBe("access_denied");
  });

  it("shows a wrong code as such, and keeps the person on the form", async () => {
    const p = await (await browser.newContext()).newPage();
    page = p;
    await p.goto(`${gh.url}/oauth/device`);
    await p.getByLabel("Enter the code your device shows").fill("BBBB-BBBB");
    await p.getByRole("button", { name: "Continue" }).click();
    await p.getByRole("alert").waitFor();
    expect(await p.getByRole("alert").textContent()).toContain("unknown, expired or already used");
    expect(await axeViolations(p)).toEqual([]);
  });
});
