import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  axeViolations,
  browserAvailable,
  screenshotOnFailure,
  sharedBrowser,
} from "../helpers/browser.js";
import { restCall } from "../helpers/rest-client.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// The console's SCIM page (issue 39 item 2, "API, CLI, console"), in headless Chromium against
// a real server: an owner connects the organization's directory (base URL and a token shown
// once, copied with a button, gone on reload), rotates and revokes the token, each proved
// against the SCIM endpoint itself; nobody but an owner is offered the page.

const run = browserAvailable();

describe.skipIf(!run)("the console's SCIM connection page", { timeout: 90_000 }, () => {
  let gh: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let org: TestOrg;
  let current = "";
  /** Every request the console made, by URL. */
  let requested: string[] = [];

  beforeAll(async () => {
    gh = await startTestServer();
    org = await gh.makeOrg("scim-org");
    browser = await sharedBrowser();
  });

  // The worker's browser stays open; each test closes its contexts (afterEach).
  afterAll(async () => {
    await gh?.close();
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === "fail") await screenshotOnFailure(page, current);
    await context?.close();
  });

  async function freshPage(name: string) {
    current = name;
    requested = [];
    context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    context.on("request", (r) => void requested.push(r.url()));
    await context.route(
      (url) => url.hostname !== "127.0.0.1",
      (route) => route.abort("blockedbyclient"),
    );
  }

  async function signInWithToken(token: string) {
    await page.goto(`${gh.url}/console/`);
    await page.getByLabel("Token", { exact: true }).fill(token);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Your groups" }).waitFor();
  }

  /** Open a group's tab, and wait until the caller's capabilities there are in. */
  async function openTab(uid: string, tab: string) {
    const caps = page.waitForResponse((r) => r.url().endsWith("/ListCallerCapabilities"));
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(uid)}/${tab}`);
    await (await caps).finished();
  }

  /** A SCIM request to the organization's endpoint with `token`: its status. */
  const scimStatus = async (token: string, path = "/Users") =>
    (
      await fetch(`${gh.config.baseUrl}/scim/v2/${org.uid}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;

  it("creates the connection, shows its token once to copy, rotates and revokes it", async () => {
    await freshPage("scim owner");
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
    await signInWithToken(org.owner.token);
    await openTab(org.uid, "members");
    await page.getByRole("link", { name: "SCIM", exact: true }).first().click();
    await page.getByText("This organization has no SCIM connection.").waitFor();
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole("button", { name: "Create SCIM connection" }).click();
    const once = page.getByRole("region", { name: "New SCIM token" });
    const token = (await once.locator("code").textContent()) ?? "";
    expect(token).toMatch(/^\S{32,}$/);
    await once.getByRole("button", { name: "Copy token" }).click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(token);

    // The base URL, to copy too, and what goes where in Okta and Entra ID.
    const baseUrl = `${gh.config.baseUrl}/scim/v2/${org.uid}`;
    const connection = page.getByRole("region", { name: "SCIM connection" });
    await connection.getByText(baseUrl, { exact: true }).waitFor();
    await connection.getByRole("button", { name: "Copy base URL" }).click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(baseUrl);
    const settings = connection.getByRole("table", { name: "Directory settings" });
    await settings.getByRole("cell", { name: "SCIM connector base URL" }).waitFor();
    await settings.getByRole("cell", { name: "Admin Credentials, Secret Token" }).waitFor();
    expect(await axeViolations(page)).toEqual([]);

    // The token is the connection's: the directory's request with it is answered.
    expect(await scimStatus(token)).toBe(200);
    // The page links to the setup guide the endpoint itself names.
    const config = await fetch(`${baseUrl}/ServiceProviderConfig`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const { documentationUri } = (await config.json()) as { documentationUri: string };
    expect(
      await page.getByRole("link", { name: /connecting Okta, Entra ID/ }).getAttribute("href"),
    ).toBe(documentationUri);

    // Shown once: a reload shows the connection, not the token, and nothing kept it.
    await page.reload();
    await page.getByText("This organization has a SCIM connection.").waitFor();
    expect(await page.content()).not.toContain(token);
    const stored = await page.evaluate(() =>
      JSON.stringify([{ ...sessionStorage }, { ...localStorage }]),
    );
    expect(stored).not.toContain(token);
    expect(await page.getByRole("region", { name: "New SCIM token" }).count()).toBe(0);

    // Rotated: a new token, shown once; the old one stops at once.
    await page.getByRole("button", { name: "Rotate token" }).click();
    const rotated = (await once.locator("code").textContent()) ?? "";
    expect(rotated).toMatch(/^\S{32,}$/);
    expect(rotated).not.toBe(token);
    expect(await scimStatus(token)).toBe(401);
    expect(await scimStatus(rotated)).toBe(200);
    await once.getByRole("button", { name: "Done" }).click();
    expect(await page.content()).not.toContain(rotated);

    // Revoked: no connection, and the directory is refused.
    await page.getByRole("button", { name: "Revoke token" }).click();
    await page.getByText("This organization has no SCIM connection.").waitFor();
    expect(await scimStatus(rotated)).toBe(401);
    const gone = await restCall(gh.url, "GET", `/iam/v2beta1/scim/${org.uid}`, undefined, {
      ...org.owner.headers,
    });
    expect(gone.status).toBe(404);
  });

  it("is offered to no editor or viewer, nor on a subgroup; the API refuses them", async () => {
    const sub = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name: "team-a" },
      org.owner.headers,
    );
    expect(sub.status, JSON.stringify(sub.json)).toBe(200);
    // The owner: no SCIM page on a subgroup's page, even at its address.
    await freshPage("scim subgroup");
    await signInWithToken(org.owner.token);
    await openTab(sub.json.uid, "scim");
    await page.getByRole("link", { name: "Members", exact: true }).first().waitFor();
    expect(await page.getByRole("link", { name: "SCIM", exact: true }).count()).toBe(0);
    expect(await page.getByRole("heading", { name: "SCIM provisioning" }).count()).toBe(0);
    await context.close();

    for (const role of ["editor", "viewer"]) {
      const who = await gh.makeIdentity(org.uid, [role]);
      await freshPage(`scim ${role}`);
      await signInWithToken(who.token);
      await openTab(org.uid, "scim");
      await page.getByRole("link", { name: "Members", exact: true }).first().waitFor();
      expect(await page.getByRole("link", { name: "SCIM", exact: true }).count()).toBe(0);
      expect(await page.getByRole("heading", { name: "SCIM provisioning" }).count()).toBe(0);
      // The page never asked the SCIM service anything for them.
      expect(requested.filter((u) => u.includes("ScimService"))).toEqual([]);
      const refused = await restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/scim/${org.uid}:createToken`,
        {},
        who.headers,
      );
      expect(refused.status).toBe(403);
      await context.close();
    }
  });
});
