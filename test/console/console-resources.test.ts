import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { expect, it } from "vitest";
import { importAdvisories } from "../../src/import/import-advisories.js";
import { parseRecords } from "../../src/import/read-records.js";
import { newChildUid } from "../../src/uid.js";
import { describeInBrowser } from "../helpers/browser.js";
import { useWebConsole } from "./web-console.js";

// The web console in headless Chromium against a real server (see console.test.ts): an
// organization's identity providers and accounts, repos and tags, advisories, and every tab
// on a phone.

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describeInBrowser("the web console, providers, repos and advisories", () => {
  const ui = useWebConsole();
  const { gh, org, openGroup, expectAccessible } = ui;
  it("adds and deletes an organization's identity provider, and associates accounts", async () => {
    const page = await ui.openAs(org.owner.token, org.uid, "providers");
    const form = page.getByRole("form", { name: "Add an identity provider" });
    await form.getByLabel("Name", { exact: true }).fill("corp-sso");
    const issuer = form.getByLabel("Issuer (https URL)");
    await issuer.fill("http://sso.example.com");
    await form.getByLabel("Client ID").fill("console-client");
    const secret = "the-client-secret-4f1c";
    await form.getByLabel(/^Client secret/).fill(secret);
    await form.getByLabel("Default role", { exact: true }).selectOption({ label: "viewer" });
    await form.getByRole("button", { name: "Add provider" }).click();
    await expect.poll(() => issuer.getAttribute("aria-invalid")).toBe("true");
    expect(
      await page.locator(`#${await issuer.getAttribute("aria-describedby")}`).textContent(),
    ).toMatch(/^must be an https URL/);
    await issuer.fill("https://sso.example.com");
    await form.getByLabel(/^Client secret/).fill(secret);
    await form.getByRole("button", { name: "Add provider" }).click();
    const row = page.getByRole("row", {
      name: /corp-sso https:\/\/sso\.example\.com console-client/,
    });
    await row.waitFor();
    await expectAccessible("identity providers");
    // The secret went to the server and is never shown again.
    expect(await page.content()).not.toContain(secret);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(secret);
    await row.getByRole("button", { name: "Delete" }).click();
    await row.waitFor({ state: "detached" });

    await page.getByRole("link", { name: "Account association" }).click();
    const assoc = page.getByRole("form", { name: "Associate accounts" });
    // A name too long and no account at all: the second violation names no field of the form,
    // and is listed with the message.
    const assocName = assoc.getByLabel("Name", { exact: true });
    await assocName.fill("n".repeat(300));
    await assoc.getByRole("button", { name: "Associate" }).click();
    await expect.poll(() => assocName.getAttribute("aria-invalid")).toBe("true");
    await assoc
      .getByRole("alert")
      .getByText("needs at least one of amazon, google, azure and github")
      .waitFor();
    await assocName.fill("production");
    const aws = assoc.getByLabel(/^Amazon account/);
    await aws.fill("1234");
    await assoc.getByRole("button", { name: "Associate" }).click();
    await expect.poll(() => aws.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(`#${await aws.getAttribute("aria-describedby")}`).textContent()).toBe(
      "must be exactly 12 digits",
    );
    await aws.fill("123456789012");
    await assoc.getByLabel(/^GitHub installation IDs/).fill("42, 43");
    await assoc.getByRole("button", { name: "Associate" }).click();
    const shown = page.getByRole("region", { name: "Associated accounts" });
    await shown.getByText("123456789012").waitFor();
    await shown.getByText("42, 43").waitFor();
    await expectAccessible("account association");
    await shown.getByRole("button", { name: "Remove association" }).click();
    await page.getByRole("form", { name: "Associate accounts" }).waitFor();
  });

  it("creates a repo and tags it (a bad digest shown at its field)", async () => {
    const page = await ui.openAs(org.owner.token, org.uid, "repos");
    const form = page.getByRole("form", { name: "Create a repo" });
    await form.getByLabel("Name", { exact: true }).fill("app");
    await form.getByRole("button", { name: "Create repo" }).click();
    // The pull reference the server computed, copied by its button.
    const ref = "registry.example.com/console-org/app";
    await ui.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
    const row = page.getByRole("row", { name: /^app / });
    await row.getByText(ref, { exact: true }).waitFor();
    await row.getByRole("button", { name: `Copy ${ref}`, exact: true }).click();
    await row.getByRole("status").filter({ hasText: "Copied" }).waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(ref);
    await page.getByRole("button", { name: "app", exact: true }).click();
    const tags = page.getByRole("region", { name: "Repo app", exact: true });
    await tags.getByText("None", { exact: true }).waitFor();
    const add = tags.getByRole("form", { name: "Add a tag" });
    // Two bad fields: each violation of the BadRequest beside its own field.
    const tag = add.getByLabel("Tag", { exact: true });
    await tag.fill("-v1");
    const digest = add.getByLabel(/^Digest/);
    await digest.fill("sha256:abc");
    await add.getByRole("button", { name: "Add tag" }).click();
    await expect.poll(() => digest.getAttribute("aria-invalid")).toBe("true");
    expect(await tag.getAttribute("aria-invalid")).toBe("true");
    const why = async (field: typeof tag) =>
      page.locator(`#${await field.getAttribute("aria-describedby")}`).textContent();
    expect(await why(digest)).toMatch(/sha256/);
    expect(await why(tag)).toMatch(/the first a letter, digit or _/);
    // Each violation is shown once, at its field; the box on top says where to look.
    const alert = add.getByRole("alert");
    expect(await alert.textContent()).toMatch(/check the 2 fields marked below/);
    expect(await alert.textContent()).not.toMatch(/sha256|letter, digit/);
    await tag.fill("v1.0");
    const sha = `sha256:${"ab".repeat(32)}`;
    await digest.fill(sha);
    await add.getByRole("button", { name: "Add tag" }).click();
    await tags.getByRole("row", { name: new RegExp(`^v1\\.0 ${sha}`) }).waitFor();
    await tags.getByText("1–1 of 1").waitFor();
    // One page: no pager to click through.
    expect(await tags.getByRole("button", { name: "Next page" }).count()).toBe(0);
    // A tag pushed behind the console's back shows after Refresh.
    const listed = await fetch(
      `${gh.url}/registry/v2beta1/repos?name=app&uidp.childrenOf=${org.uid}`,
      { headers: org.owner.headers },
    );
    const repoUid = ((await listed.json()) as { repos: { uid: string }[] }).repos[0]!.uid;
    const pushed = await fetch(`${gh.url}/registry/v2beta1/tags/${repoUid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ name: "v2.0", digest: `sha256:${"cd".repeat(32)}` }),
    });
    expect(pushed.status).toBe(200);
    // Clicking the repo again shows its tags as they are now (it sent no request before).
    await page.getByRole("button", { name: "app", exact: true }).click();
    await tags.getByText("1–2 of 2").waitFor();
    const push = async (name: string) =>
      fetch(`${gh.url}/registry/v2beta1/tags/${repoUid}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ name, digest: `sha256:${"ef".repeat(32)}` }),
      });
    // So does a click on the tab already open, and Refresh.
    expect((await push("v3.0")).status).toBe(200);
    await page.getByRole("link", { name: "Repos", exact: true }).click();
    await tags.getByText("1–3 of 3").waitFor();
    expect((await push("v4.0")).status).toBe(200);
    await tags.getByRole("button", { name: "Refresh" }).click();
    await tags.getByText("1–4 of 4").waitFor();
    // Each tag pulls by tag and by digest.
    await tags.getByText(":v1.0", { exact: true }).waitFor();
    await tags.getByRole("button", { name: `Copy ${ref}@${sha}`, exact: true }).click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(`${ref}@${sha}`);
    await tags.getByRole("button", { name: `Copy ${ref}:v1.0`, exact: true }).click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(`${ref}:v1.0`);
    await expectAccessible("repos and tags");
  });

  it("creates a public repo and makes it private again", async () => {
    const page = await ui.openAs(org.owner.token, org.uid, "repos");
    const form = page.getByRole("form", { name: "Create a repo" });
    await form.getByLabel("Name", { exact: true }).fill("site");
    await form.getByLabel("Public (anyone may pull)").check();
    await form.getByRole("button", { name: "Create repo" }).click();
    const row = page.getByRole("row", { name: /^site / });
    await row.getByRole("button", { name: "Make private" }).click();
    await row.getByRole("button", { name: "Make public" }).waitFor();
    const listed = await fetch(
      `${gh.url}/registry/v2beta1/repos?name=site&uidp.childrenOf=${org.uid}`,
      { headers: org.owner.headers },
    );
    const { repos } = (await listed.json()) as { repos: { public?: boolean }[] };
    expect(repos).toHaveLength(1);
    expect(repos[0]?.public ?? false).toBe(false);
  });

  it("fits a 390 px phone on every tab: no sideways scrolling, the tabs folded into a menu", async () => {
    // A provider (its redirect URI is the widest cell) and a repo, so those tabs have rows.
    for (const [path, body] of [
      [
        `/iam/v2beta1/identityProviders/${org.uid}`,
        { name: "phone-sso", oidc: { issuer: "https://login.example.com", clientId: "c" } },
      ],
      [`/registry/v2beta1/repos/${org.uid}`, { name: "phone-app", description: "on a phone" }],
    ] as const) {
      const made = await fetch(`${gh.url}${path}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(made.status).toBe(200);
    }
    const page = await ui.freshPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await ui.signIn(org.owner.token);
    await openGroup(org.uid);
    const menu = page.locator("details.tab-menu");
    await menu.locator("summary").click();
    const links = menu.getByRole("navigation", { name: "Group sections menu" }).getByRole("link");
    const hrefs: string[] = [];
    for (const link of await links.all())
      hrefs.push(`${gh.url}/console/${await link.getAttribute("href")}`);
    expect(hrefs.length).toBeGreaterThanOrEqual(13);
    expect(
      await page.getByRole("navigation", { name: "Group sections", exact: true }).count(),
    ).toBe(0);
    const overflowing: string[] = [];
    for (const href of hrefs) {
      await page.goto(href);
      await page.locator("section.tab").waitFor();
      // What a tab fetches first (a count, a table or a form), then a moment for the rest.
      await page.waitForLoadState("networkidle");
      const width = Number(await page.evaluate("document.documentElement.scrollWidth"));
      if (width > 390) overflowing.push(`${new URL(href).hash}: ${width} px`);
    }
    expect(overflowing).toEqual([]);
    await openGroup(org.uid, "providers");
    await page.getByRole("row", { name: /^phone-sso / }).waitFor();
    await expectAccessible("phone, identity providers");
  });

  it("copies a provider's redirect URI and edits the provider", async () => {
    const made = await fetch(`${gh.url}/iam/v2beta1/identityProviders/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({
        name: "edit-sso",
        oidc: { issuer: "https://login.example.com", clientId: "before", clientSecret: "s1" },
      }),
    });
    const provider = (await made.json()) as { uid: string; redirectUri: string };
    const page = await ui.openAs(org.owner.token, org.uid, "providers");
    await ui.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
    const row = page.getByRole("row", { name: /^edit-sso / });
    await row.getByRole("button", { name: `Copy ${provider.redirectUri}`, exact: true }).click();
    await expect
      .poll(() => page.evaluate("navigator.clipboard.readText()"))
      .toBe(provider.redirectUri);
    await row.getByRole("button", { name: "edit-sso", exact: true }).click();
    const form = page.getByRole("form", { name: "Edit identity provider" });
    await form.getByLabel("Client ID").fill("after");
    await form.getByLabel(/^Email domains/).fill("edit.example");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row", { name: /^edit-sso .* after / }).waitFor();
    const got = await fetch(`${gh.url}/iam/v2beta1/identityProviders/${provider.uid}`, {
      headers: org.owner.headers,
    });
    expect(await got.json()).toMatchObject({
      name: "edit-sso",
      oidc: { issuer: "https://login.example.com", clientId: "after" },
      emailDomains: ["edit.example"],
    });
    await expectAccessible("identity provider edit");
  });

  it("searches advisories after an import, by package and by alias, with events", async () => {
    const text = gunzipSync(readFileSync("test/fixtures/osv/go-vulndb-sample.jsonl.gz")).toString();
    const summary = await importAdvisories(gh.store, org.uid, parseRecords(text), {
      out: () => {},
      err: () => {},
    });
    expect(summary.rejected).toEqual([]);
    const page = await ui.openAs(org.owner.token, org.uid, "advisories");
    // Every imported advisory first, then the searches.
    await page.getByText(`1–50 of ${summary.created}`).waitFor();
    const search = page.getByRole("form", { name: "Search advisories" });
    await search.getByLabel("Package", { exact: true }).fill("github.com/gin-gonic/gin");
    await search.getByRole("button", { name: "Search" }).click();
    // gin's three advisories of the sample, and nothing else.
    await page.getByText("1–3 of 3").waitFor();
    await page.getByRole("button", { name: "GO-2021-0052" }).waitFor();
    await search.getByLabel("Package", { exact: true }).fill("");
    await search.getByLabel("Alias (CVE, GHSA…)").fill("CVE-2020-36567");
    await search.getByRole("button", { name: "Search" }).click();
    await page.getByText("1–1 of 1").waitFor();
    const list = page.getByRole("region", { name: "Advisories" });
    await list.getByLabel("Advisory id", { exact: true }).fill("GO-2021-0052");
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByText("None", { exact: true }).waitFor();
    await list.getByLabel("Advisory id", { exact: true }).fill("GO-2020-0001");
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByText("1–1 of 1").waitFor();
    // Severity where the data has it: the Go sample gives none.
    await page.getByRole("row", { name: /^GO-2020-0001 .*not given/ }).waitFor();
    await gh.store.createAdvisory(
      newChildUid(org.uid),
      org.uid,
      {
        advisoryId: "SEV-2026-1",
        aliases: [],
        summary: "scored",
        artifactName: "",
        componentName: "libscored",
        componentType: "",
        severities: [{ type: "CVSS_V3", score: "7.5" }],
        events: [],
      },
      Date.now(),
    );
    await list.getByLabel("Advisory id", { exact: true }).fill("SEV-2026-1");
    await search.getByLabel("Alias (CVE, GHSA…)").fill("");
    await search.getByRole("button", { name: "Search" }).click();
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("row", { name: /^SEV-2026-1 .*CVSS_V3 7\.5/ }).waitFor();
    await list.getByLabel("Advisory id", { exact: true }).fill("GO-2020-0001");
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("button", { name: "GO-2020-0001" }).click();
    await page.getByRole("heading", { name: "Events" }).waitFor();
    await expectAccessible("advisories");
  });
});
