import type { BrowserContext, Page } from "playwright-core";
import { expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { describeInBrowser, useConsoleSuite } from "../helpers/browser.js";
import { restCall } from "../helpers/rest-client.js";

// The console's side of issue 39 items 5, 6 and 7, in headless Chromium against a real server
// and a real identity provider: an owner's People tab (emails, search, sessions ended), the
// "Create an organization" form on a locked-down server, and an invite link that signs the
// person in and redeems its code in one step, the code never in the server's log.

describeInBrowser("the console's people, organization creation and invite links", () => {
  const logLines: string[] = [];
  const ui = useConsoleSuite({
    org: "people-org",
    idpPeople: {
      alice: { name: "Alice Invited", email: "alice@example.com", email_verified: true },
    },
    env: {
      // A locked-down server: only gatehouse bootstrap makes organizations.
      GATEHOUSE_ORGANIZATION_CREATION: "bootstrap",
      GATEHOUSE_LOG_LEVEL: "debug",
    },
    server: { logStream: { write: (l) => void logLines.push(l) } },
  });
  const { gh, org } = ui;
  let page: Page;
  let context: BrowserContext;

  async function freshPage() {
    page = await ui.freshPage();
    context = ui.context;
  }

  it("signs an invited person in and redeems the link's code in one step", async () => {
    await freshPage();
    // The owner makes an invite in the console and is shown its link.
    await ui.signIn(org.owner.token);
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/invites`);
    const form = page.getByRole("form", { name: "Create an invite" });
    await form.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await form.getByRole("button", { name: "Create invite" }).click();
    const link = (await page.locator("#invite-link").textContent()) ?? "";
    const code = (await page.locator("#invite-code").textContent()) ?? "";
    expect(link).toBe(`${gh.url}/console/#/invite/${code}`);
    await page.getByRole("button", { name: "Copy link" }).waitFor();
    await context.close();

    // Alice opens the link in a fresh browser: one click on her provider, and she is in.
    await freshPage();
    const requested: string[] = [];
    context.on("request", (r) => {
      requested.push(r.url(), r.headers().referer ?? "");
    });
    await page.goto(link);
    await page.getByText("You were invited to join a group").waitFor();
    // The code left the address at once.
    expect(page.url()).not.toContain(code);
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.locator("input[name=login]").fill("alice");
    await page.locator("input[name=password]").fill("any");
    await page.locator("button[type=submit]").click();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText("You joined people-org as viewer.").waitFor();
    await page.getByRole("heading", { name: "people-org" }).waitFor();
    // No request, no Referer and no server log line carried the code.
    expect(requested.filter((u) => u.includes(code))).toEqual([]);
    expect(logLines.filter((l) => l.includes(code))).toEqual([]);
    // Alice is one of the organization's people, come by invite.
    const found = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/people?groupUid=${org.uid}&query=alice`,
      undefined,
      org.owner.headers,
    );
    expect(found.json.people).toMatchObject([
      { email: "alice@example.com", origin: "ORIGIN_INVITE" },
    ]);
  });

  it("offers no organization to create on a locked-down server, and says why", async () => {
    await freshPage();
    await page.goto(`${gh.url}/console/`);
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.locator("input[name=login]").fill("alice");
    await page.locator("input[name=password]").fill("any");
    await page.locator("button[type=submit]").click();
    await page
      .getByRole("button", { name: "Continue" })
      .click()
      .catch(() => undefined);
    await page.getByRole("heading", { name: "Your groups" }).waitFor();
    await page.locator("#no-org-creation").waitFor();
    expect(await page.locator("#no-org-creation").textContent()).toContain("gatehouse bootstrap");
    expect(await page.getByRole("form", { name: "Create an organization" }).count()).toBe(0);
  });

  it("shows an owner the people, their emails, and ends their sessions", async () => {
    await freshPage();
    // Alice's session from the tests above is live until the owner ends it.
    const alice = (
      await restCall(
        gh.url,
        "GET",
        `/iam/v2beta1/people?groupUid=${org.uid}&query=alice`,
        undefined,
        org.owner.headers,
      )
    ).json.people[0];
    const sessionsOf = async () =>
      (
        await restCall(
          gh.url,
          "GET",
          `/iam/v2beta1/people/${alice.uid}/sessions?groupUid=${org.uid}`,
          undefined,
          org.owner.headers,
        )
      ).json.sessions as unknown[];
    expect((await sessionsOf()).length).toBeGreaterThan(0);
    // Alice is in the team "support", which holds editor at the organization.
    const post = async (path: string, body: unknown) => {
      const r = await restCall(gh.url, "POST", path, body, org.owner.headers);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return r.json;
    };
    const support = await post(`/iam/v2beta1/teams/${org.uid}`, { name: "support" });
    await post(`/iam/v2beta1/teams/${support.uid}:addMembers`, { identityUids: [alice.uid] });
    await post(`/iam/v2beta1/roleBindings/${org.uid}`, {
      teamUid: support.uid,
      roleUid: builtinRoles.find((r) => r.name === "editor")!.uid,
    });

    await ui.signIn(org.owner.token);
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/people`);
    const people = page.getByRole("region", { name: "People" });
    await people.getByRole("cell", { name: "alice@example.com" }).waitFor();
    await people.getByRole("cell", { name: "Invite", exact: true }).waitFor();
    // Her teams, and the role she holds through one, saying so.
    await people.getByRole("cell", { name: "support", exact: true }).waitFor();
    expect(await people.getByTitle(support.uid).textContent()).toBe("support");
    await people
      .getByRole("cell", { name: /editor at people-org \(through team support\)/ })
      .waitFor();
    // Search by part of the email.
    await people.getByLabel("Name or email").fill("ALICE@");
    await people.getByRole("button", { name: "Filter" }).click();
    await people.getByText("1–1 of 1").waitFor();
    await people.getByRole("button", { name: "Sessions of Alice Invited" }).click();
    const sessions = page.getByRole("region", { name: "Sessions of Alice Invited" });
    await sessions.getByRole("cell", { name: "gatehouse-console" }).first().waitFor();
    await sessions.getByRole("button", { name: "End all sessions" }).click();
    await sessions.getByText("No active session.").waitFor();
    expect(await sessionsOf()).toEqual([]);
  });
});
