import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { browserAvailable, screenshotOnFailure, sharedBrowser } from "../helpers/browser.js";
import { cliAuthorizeUrl, cliRedirect, newPkce } from "../helpers/cli-sign-in.js";
import { restCall } from "../helpers/rest-client.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// The console's Events tab in headless Chromium against a real server and a real identity
// provider (issue 40 items 3 and 5): a grant made by an identity provider's default role and
// one made by an invite each read as such, and an event's subject is a link to the
// resource's page.

const run = browserAvailable();
const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;

describe.skipIf(!run)("the console's Events tab", { timeout: 90_000 }, () => {
  let gh: TestServer;
  let idp: TestIdp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let org: TestOrg;
  let payments: string;
  let current = "";

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: { pat: { name: "Pat Provider" } },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      },
      { port },
    );
    org = await gh.makeOrg("events-org");
    const made = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/groups/${org.uid}`,
      { name: "payments" },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    payments = made.json.uid as string;

    // Pat signs in through the organization's provider, whose default role is viewer.
    const provider = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/identityProviders/${org.uid}`,
      {
        name: "corp",
        defaultRole: viewer,
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
      org.owner.headers,
    );
    expect(provider.status).toBe(200);
    idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${provider.json.uid}`]);
    const url = cliAuthorizeUrl(gh.url, newPkce().challenge, {
      identity_provider: provider.json.uid,
    });
    const back = await signInAtIdp(url, "pat", cliRedirect);
    expect(back.searchParams.get("code")).not.toBeNull();

    // A person of another organization redeems an invite to payments as viewer.
    const invite = await restCall(
      gh.url,
      "POST",
      `/iam/v2beta1/groupInvites/${payments}`,
      { roleUid: viewer },
      org.owner.headers,
    );
    expect(invite.status).toBe(200);
    const guest = (await gh.makeOrg("guest-org")).owner;
    const redeemed = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: invite.json.code },
      guest.headers,
    );
    expect(redeemed.status).toBe(200);
    browser = await sharedBrowser();
  });

  // The worker's browser stays open; each test closes its context (afterEach).
  afterAll(async () => {
    await gh?.close();
    await idp?.close();
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === "fail") await screenshotOnFailure(page, current);
    await context?.close();
  });

  async function freshPage(name: string) {
    current = name;
    context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    await context.route(
      (url) => url.hostname !== "127.0.0.1",
      (route) => route.abort("blockedbyclient"),
    );
    await page.goto(`${gh.url}/console/`);
    await page.getByLabel("Token", { exact: true }).fill(org.owner.token);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Your groups" }).waitFor();
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/events`);
  }

  it("says why a grant was made: an identity provider's default role, an invite", async () => {
    await freshPage("reasons");
    const events = page.getByRole("region", { name: "Events" });
    await page.getByRole("combobox", { name: "What" }).selectOption({
      label: "grants and revocations",
    });
    const byProvider = events
      .getByRole("row")
      .filter({ hasText: "(default role of an identity provider)" });
    await byProvider.waitFor();
    expect(await byProvider.textContent()).toContain("Pat Provider as viewer at events-org");
    const byInvite = events.getByRole("row").filter({ hasText: "group invite redeemed" });
    await byInvite.waitFor();
    // The type says the reason already: not "group invite redeemed (invite redeemed)".
    expect(await byInvite.textContent()).not.toContain("(invite redeemed)");
    expect(await byInvite.textContent()).toContain("as viewer at payments");
    // Exactly those two grants, each with its own reason. The rows above are in the unfiltered
    // list too, which stays on screen until the filtered page arrives: wait for that page.
    await expect.poll(() => events.getByRole("row").count(), { timeout: 20_000 }).toBe(3);
  });

  it("links an event's subject to the resource's page, and the link goes there", async () => {
    await freshPage("subject links");
    const events = page.getByRole("region", { name: "Events" });
    await page.getByRole("combobox", { name: "What" }).selectOption({ label: "groups" });
    // The group's creation: its name links to the group's page.
    const created = events.getByRole("row").filter({ hasText: "group created" });
    await created.first().waitFor();
    const link = created.getByRole("link", { name: "payments", exact: true });
    expect(await link.getAttribute("href")).toBe(
      `#/group/${encodeURIComponent(payments)}/subgroups`,
    );
    await link.click();
    await page.getByRole("heading", { name: "payments", level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/group/${encodeURIComponent(payments)}/subgroups`);

    // A grant's subject opens the role bindings of the group it was made at.
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/events`);
    await page.getByRole("combobox", { name: "What" }).selectOption({
      label: "grants and revocations",
    });
    const grant = page
      .getByRole("region", { name: "Events" })
      .getByRole("row")
      .filter({ hasText: "group invite redeemed" });
    await grant.waitFor();
    await grant.getByRole("link", { name: /as viewer at payments/ }).click();
    await page.getByRole("heading", { name: "payments", level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/group/${encodeURIComponent(payments)}/bindings`);
    await page.getByRole("heading", { name: "Role bindings", level: 2 }).waitFor();
  });
});
