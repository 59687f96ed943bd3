import { expect, it } from "vitest";
import {
  createDomainVerification,
  verificationName,
  verificationRecord,
} from "../../src/auth/oauth/domain-verification.js";
import { describeInBrowser } from "../helpers/browser.js";
import { signInAtIdp } from "../helpers/test-idp.js";
import type { TestOrg } from "../helpers/test-server.js";
import { useWebConsole } from "./web-console.js";

// The web console in headless Chromium against a real server (see console.test.ts): a person
// signing in through the login provider, or through an organization's provider chosen by
// its name or their email's domain.

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describeInBrowser("the web console, signing in through providers", () => {
  const ui = useWebConsole();
  const { gh, idp, org, expectAccessible, loginAtIdpAsAlice } = ui;
  it("signs in through the login provider in the browser, and signs out", async () => {
    const page = await ui.freshPage();
    await page.goto(`${gh.url}/console/`);
    await expectAccessible("sign-in page");
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    // The test identity provider's own pages: log in as alice, then consent.
    await loginAtIdpAsAlice();
    await page.getByText("Alice Console").waitFor();
    const stored = await page.evaluate(() => sessionStorage.getItem("gatehouse.session"));
    const refreshToken = (JSON.parse(stored as string) as { refreshToken: string }).refreshToken;
    expect(refreshToken).toMatch(/^gatehouse_rt_/);

    // A person creates an organization from the home page, and lands on it.
    const create = page.getByRole("form", { name: "Create an organization" });
    await create.getByLabel("Name", { exact: true }).fill("alice-org");
    await create.getByRole("button", { name: "Create organization" }).click();
    await page.getByRole("heading", { name: "alice-org" }).waitFor();
    await page.getByRole("link", { name: "Home" }).click();
    await page.getByRole("row", { name: /alice-org owner/ }).waitFor();

    const revoked = page.waitForResponse((r) => r.url() === `${gh.url}/oauth/revoke`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in with a token" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("gatehouse.session"))).toBeNull();
    expect((await revoked).ok()).toBe(true);
    // Signing out revoked the session on the server: its refresh token no longer works (one
    // try: a second use of a refresh token would end the session by itself).
    const res = await fetch(`${gh.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: "gatehouse-console",
      }),
    });
    expect(((await res.json()) as { error?: string }).error).toBe("invalid_grant");
  });

  it("the same flow works without a browser too (the redirect target is the console)", async () => {
    // Sanity of the console client's registration: its redirect is <base URL>/console/.
    const q = new URLSearchParams({
      response_type: "code",
      client_id: "gatehouse-console",
      redirect_uri: `${gh.url}/console/`,
      code_challenge: "a".repeat(43),
      code_challenge_method: "S256",
      state: "s",
    });
    const back = await signInAtIdp(`${gh.url}/oauth/authorize?${q}`, "alice", `${gh.url}/console/`);
    expect(back.searchParams.get("code")).toBeTruthy();
  });

  it("signs a person in through their organization's provider, chosen by its name", async () => {
    const roles = await fetch(`${gh.url}/iam/v2beta1/roles?name=viewer`, {
      headers: org.owner.headers,
    });
    const viewer = ((await roles.json()) as { roles: { uid: string }[] }).roles[0]?.uid;
    const made = await fetch(`${gh.url}/iam/v2beta1/identityProviders/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({
        name: "console-org-sso",
        defaultRole: viewer,
        oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      }),
    });
    expect(made.status).toBe(200);
    // Each provider has its own redirect URI, registered at it (beside the login provider's).
    const providerUid = ((await made.json()) as { uid: string }).uid;
    idp.setRedirectUris([
      `${gh.url}/oauth/callback`,
      `${gh.url}/oauth/idp-callback/${providerUid}`,
    ]);
    const page = await ui.freshPage();
    await page.goto(`${gh.url}/console/`);
    const field = page.getByLabel(
      "Your work email, or your organization's identity provider (its name)",
    );
    await field.fill("no-such-sso");
    await page.getByRole("button", { name: "Sign in through this provider" }).click();
    await page.getByRole("alert").getByText("No identity provider is named no-such-sso.").waitFor();
    await expectAccessible("sign-in page, unknown provider");
    await field.fill("console-org-sso");
    await page.getByRole("button", { name: "Sign in through this provider" }).click();
    // A name is anyone's to give: the person sees who declares the provider, and chooses.
    await page
      .getByRole("button", { name: /^console-org-sso, declared by the organization console-org/ })
      .click();
    await loginAtIdpAsAlice();
    // The provider's default role, at its organization.
    await page.getByRole("row", { name: /^console-org viewer/ }).waitFor();
  });

  it("declares a provider's email domains and signs a person in by their email", async () => {
    let page = await ui.openAs(org.owner.token, org.uid, "providers");
    const form = page.getByRole("form", { name: "Add an identity provider" });
    await form.getByLabel("Name", { exact: true }).fill("console-org-mail");
    await form.getByLabel("Issuer (https URL)").fill(idp.issuer);
    await form.getByLabel("Client ID").fill(idp.clientId);
    await form.getByLabel("Client secret (never shown again)").fill(idp.clientSecret);
    // A bad domain is refused beside its field.
    const domains = form.getByLabel(/^Email domains that sign in here/);
    await domains.fill("console-org.example, not_a_domain");
    await form.getByRole("button", { name: "Add provider" }).click();
    await expect.poll(() => domains.getAttribute("aria-invalid")).toBe("true");
    await domains.fill("Console-Org.example, mail.console-org.example");
    await form.getByRole("button", { name: "Add provider" }).click();
    const row = page.getByRole("row", { name: /^console-org-mail / });
    await row.getByText("console-org.example, mail.console-org.example").waitFor();
    await expectAccessible("identity providers");
    const listed = await fetch(`${gh.url}/iam/v2beta1/identityProviders?name=console-org-mail`, {
      headers: org.owner.headers,
    });
    const uid = ((await listed.json()) as { identityProviders: { uid: string }[] })
      .identityProviders[0]!.uid;
    idp.setRedirectUris([`${gh.url}/oauth/callback`, `${gh.url}/oauth/idp-callback/${uid}`]);

    await ui.context.close();
    page = await ui.freshPage();
    await page.goto(`${gh.url}/console/`);
    const field = page.getByLabel(
      "Your work email, or your organization's identity provider (its name)",
    );
    await field.fill("alice@elsewhere.example");
    await page.getByRole("button", { name: "Sign in through this provider" }).click();
    await page
      .getByRole("alert")
      .getByText(/No identity provider declares the domain of alice@elsewhere\.example/)
      .waitFor();
    await field.fill("Alice@MAIL.console-org.example");
    await page.getByRole("button", { name: "Sign in through this provider" }).click();
    // An unverified domain claim is offered, never followed by itself: the person chooses.
    await page
      .getByRole("button", {
        name: /^console-org-mail, declared by the organization console-org \(not verified\)/,
      })
      .click();
    // At the provider the domain chose (through Gatehouse's authorize with its uid).
    await loginAtIdpAsAlice();
  });

  it("never follows a squatter's domain claim, and lists the real organization's provider", async () => {
    // A stranger's organization declares the company's domain first, eleven times over, its
    // providers at the very identity provider the company uses (its login page is the bait).
    const stranger = await gh.makeOrg("stranger");
    const company = await gh.makeOrg("squat-company");
    const declare = async (at: TestOrg, name: string) => {
      const res = await fetch(`${gh.url}/iam/v2beta1/identityProviders/${at.uid}`, {
        method: "POST",
        headers: { ...at.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({
          name,
          emailDomains: ["squat-company.example"],
          oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
        }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { uid: string }).uid;
    };
    const ask = async (email: string) => {
      await page.goto(`${gh.url}/console/`);
      await page
        .getByLabel("Your work email, or your organization's identity provider (its name)")
        .fill(email);
      await page.getByRole("button", { name: "Sign in through this provider" }).click();
      await page.getByRole("region", { name: "Matching providers" }).waitFor();
    };
    await declare(stranger, "squat-company-sso-0");
    const page = await ui.freshPage();
    await ask("bob@squat-company.example");
    // The one claim, the stranger's, is shown with who declares it, and not followed.
    const choices = page.getByRole("region", { name: "Matching providers" }).getByRole("button");
    expect(await choices.allTextContents()).toEqual([
      expect.stringMatching(
        /^squat-company-sso-0, declared by the organization stranger \(not verified\)/,
      ),
    ]);
    expect(new URL(page.url()).origin).toBe(gh.url);

    for (let i = 1; i < 11; i++) await declare(stranger, `squat-company-sso-${i}`);
    const real = await declare(company, "squat-company-real");
    await ask("bob@squat-company.example");
    const listed = await choices.allTextContents();
    // The company's provider is there beside the stranger's oldest claims, at most three.
    expect(listed.filter((t) => t.includes("organization stranger"))).toHaveLength(3);
    expect(listed.filter((t) => t.includes("organization squat-company "))).toEqual([
      expect.stringContaining(`uid ending ${real.slice(-6)}`),
    ]);
    expect(new URL(page.url()).origin).toBe(gh.url);
    await expectAccessible("sign-in page, providers to choose from");

    // The company publishes its provider's TXT record (the test's DNS): its verified claim
    // is followed by itself, past the stranger's older, unverified ones.
    const verification = createDomainVerification({
      store: gh.store,
      resolveTxt: async (name) =>
        name === verificationName("squat-company.example") ? [[verificationRecord(real)]] : [],
      now: Date.now,
      log: () => {},
    });
    expect((await verification.run()).verified).toBe(1);
    idp.setRedirectUris([`${gh.url}/oauth/callback`, `${gh.url}/oauth/idp-callback/${real}`]);
    await page.goto(`${gh.url}/console/`);
    await page
      .getByLabel("Your work email, or your organization's identity provider (its name)")
      .fill("bob@squat-company.example");
    await page.getByRole("button", { name: "Sign in through this provider" }).click();
    // At the identity provider's own login page, through the company's provider.
    await page.locator("input[name=login]").waitFor();
    expect(new URL(page.url()).origin).toBe(idp.issuer);
  });
});
