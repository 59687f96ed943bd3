import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { importAdvisories } from "../../src/import/import-advisories.js";
import { parseRecords } from "../../src/import/read-records.js";
import { newChildUid } from "../../src/uid.js";
import {
  axeViolations,
  browserAvailable,
  launchBrowser,
  screenshotOnFailure,
} from "../helpers/browser.js";
import { signInAtIdp, startTestIdp, type TestIdp } from "../helpers/test-idp.js";
import {
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// The web console in headless Chromium against a real server: every page through
// connect-web, the errors from google.rpc.Status, axe-core on each page.

const run = browserAvailable();

let gh: TestServer;
let idp: TestIdp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let org: TestOrg;
const pageErrors: string[] = [];

async function signInWithToken(token: string) {
  await page.goto(`${gh.url}/console/`);
  await page.getByLabel("Token", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Your groups" }).waitFor();
}

async function expectAccessible(where: string) {
  const violations = await axeViolations(page);
  expect(violations, `accessibility of ${where}`).toEqual([]);
}

async function openGroup(uid: string, tab = "subgroups") {
  await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(uid)}/${tab}`);
}

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describe.skipIf(!run)("the web console", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: {
        alice: { name: "Alice Console", email: "alice@example.com", email_verified: true },
      },
    });
    gh = await startTestServer(
      {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_LOGIN_NAME: "Test IdP",
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      },
      { port },
    );
    org = await gh.makeOrg("console-org");
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await gh?.close();
    await idp?.close();
  });

  // A fresh tab (and sessionStorage) for every test; confirm dialogs are accepted.
  let current = "";
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === "fail") await screenshotOnFailure(page, current);
    await context?.close();
  });
  async function freshPage(name: string) {
    current = name;
    context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) {
        pageErrors.push(m.text());
      }
    });
  }

  it("is served with a strict CSP and cacheable hashed assets", async () => {
    const res = await fetch(`${gh.url}/console/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const html = await res.text();
    const script = /src="\/console\/(main-[\w-]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${gh.url}/console/${script}`);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${gh.url}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${gh.url}/console/nope.js`)).status).toBe(404);
    const moved = await fetch(`${gh.url}/console`, { redirect: "manual" });
    expect(moved.headers.get("location")).toBe("/console/");
  });

  it("signs in with a token; creates, renames, fails to delete the parent, deletes a subgroup", async () => {
    await freshPage("groups");
    await signInWithToken(org.owner.token);
    await expectAccessible("home");
    await page.getByRole("link", { name: "console-org" }).click();
    await page.getByRole("heading", { name: "console-org" }).waitFor();
    await expectAccessible("group page");

    const create = page.getByRole("form", { name: "Create a subgroup" });
    // A field violation is shown next to its field.
    await create.getByLabel("Name").fill("x".repeat(300));
    await create.getByRole("button", { name: "Create subgroup" }).click();
    const nameInput = create.getByLabel("Name");
    await create.locator("[aria-invalid=true]").waitFor();
    const describedBy = await nameInput.getAttribute("aria-describedby");
    expect(await page.locator(`#${describedBy}`).textContent()).toBe(
      "must be at most 256 characters",
    );

    await create.getByLabel("Name").fill("team-a");
    await create.getByRole("button", { name: "Create subgroup" }).click();
    await page.getByRole("link", { name: "team-a" }).click();
    await page.getByRole("heading", { name: "team-a" }).waitFor();
    await page.getByText("Rename or delete this group").click();
    const rename = page.getByRole("form", { name: "Rename group" });
    await rename.getByLabel("New name").fill("team-b");
    await rename.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("heading", { name: "team-b" }).waitFor();

    // The parent still has a child: the API's precondition is the message shown.
    await page.getByRole("link", { name: "console-org" }).click();
    await page.getByRole("heading", { name: "console-org" }).waitFor();
    await page.getByText("Rename or delete this group").click();
    await page.getByRole("button", { name: "Delete this group" }).click();
    await page.getByRole("alert").getByText("cannot delete group with child groups").waitFor();

    await page.getByRole("link", { name: "team-b" }).click();
    await page.getByRole("heading", { name: "team-b" }).waitFor();
    await page.getByText("Rename or delete this group").click();
    await page.getByRole("button", { name: "Delete this group" }).click();
    await page.getByRole("heading", { name: "console-org" }).waitFor();
    await page.getByText("None of 0").waitFor();
    expect(pageErrors).toEqual([]);
  });

  it("creates a workload identity and grants it viewer with the pickers", async () => {
    await freshPage("identities");
    await signInWithToken(org.owner.token);
    await openGroup(org.uid, "identities");
    const form = page.getByRole("form", { name: "Create a workload identity" });
    await form.getByLabel("Name").fill("ci-deployer");
    await form.getByLabel("Issuer").fill("https://ci.example.com");
    await form.getByLabel("Subject (exact)").fill("repo:acme/app");
    await form.getByRole("button", { name: "Create identity" }).click();
    await page.getByRole("button", { name: "ci-deployer" }).waitFor();
    await expectAccessible("identities");

    await page.getByRole("link", { name: "Role bindings" }).click();
    const grant = page.getByRole("form", { name: "Grant a role" });
    await grant.getByLabel("Identity").selectOption({ label: "ci-deployer" });
    await grant.getByLabel("Role").selectOption({ label: "viewer" });
    await grant.getByRole("button", { name: "Grant" }).click();
    const row = page.getByRole("row", { name: /ci-deployer viewer console-org/ });
    await row.waitFor();
    await expectAccessible("role bindings");
  });

  it("creates an invite and shows its code once", async () => {
    await freshPage("invites");
    await signInWithToken(org.owner.token);
    await openGroup(org.uid, "invites");
    const form = page.getByRole("form", { name: "Create an invite" });
    await form.getByLabel("Role").selectOption({ label: "viewer" });
    await form.getByRole("button", { name: "Create invite" }).click();
    const code = await page.locator("#invite-code").textContent();
    expect(code).toMatch(/^\S{16,}$/);
    await page.getByText(`gatehouse iam invites redeem ${code}`).waitFor();
    await expectAccessible("invites");
    await page.getByRole("button", { name: "Done" }).click();
    await page.reload();
    await page.getByRole("heading", { name: "Invites" }).waitFor();
    await page.getByText("1–1 of 1").waitFor();
    expect(await page.content()).not.toContain(code as string);
  });

  it("pages through 120 groups: three pages, counts right", async () => {
    const parent = await gh.store.createGroup({
      uid: newChildUid(org.uid),
      parentUid: org.uid,
      name: "many",
      description: "",
      now: Date.now(),
    });
    for (let i = 0; i < 120; i++) {
      await gh.store.createGroup({
        uid: newChildUid(parent.uid),
        parentUid: parent.uid,
        name: `g${String(i).padStart(3, "0")}`,
        description: "",
        now: Date.now(),
      });
    }
    await freshPage("paging");
    await signInWithToken(org.owner.token);
    await openGroup(parent.uid);
    await page.getByText("1–50 of 120").waitFor();
    await page.getByRole("link", { name: "g000" }).waitFor();
    await page.getByRole("button", { name: "Next page" }).click();
    await page.getByText("51–100 of 120").waitFor();
    await page.getByRole("link", { name: "g050" }).waitFor();
    await page.getByRole("button", { name: "Next page" }).click();
    await page.getByText("101–120 of 120").waitFor();
    expect(await page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Previous page" }).click();
    await page.getByText("51–100 of 120").waitFor();
    await page.getByLabel("Order").selectOption("name desc");
    await page.getByText("1–50 of 120").waitFor();
    await page.getByRole("link", { name: "g119" }).waitFor();
  });

  it("searches advisories after an import, by package and by alias, with events", async () => {
    const text = gunzipSync(readFileSync("test/fixtures/osv/go-vulndb-sample.jsonl.gz")).toString();
    const summary = await importAdvisories(gh.store, org.uid, parseRecords(text), {
      out: () => {},
      err: () => {},
    });
    expect(summary.rejected).toEqual([]);
    await freshPage("advisories");
    await signInWithToken(org.owner.token);
    await openGroup(org.uid, "advisories");
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
    await page.getByRole("button", { name: "GO-2020-0001" }).click();
    await page.getByRole("heading", { name: "Events" }).waitFor();
    await expectAccessible("advisories");
  });

  it("signs in through the login provider in the browser, and signs out", async () => {
    await freshPage("browser-sign-in");
    await page.goto(`${gh.url}/console/`);
    await expectAccessible("sign-in page");
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    // The test identity provider's own pages: log in as alice, then consent.
    await page.locator("input[name=login]").fill("alice");
    await page.locator("input[name=password]").fill("any");
    await page.locator("button[type=submit]").click();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("heading", { name: "Your groups" }).waitFor();
    await page.getByText("Alice Console").waitFor();
    const stored = await page.evaluate(() => sessionStorage.getItem("gatehouse.session"));
    const refreshToken = (JSON.parse(stored as string) as { refreshToken: string }).refreshToken;
    expect(refreshToken).toMatch(/^gatehouse_rt_/);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in with a token" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("gatehouse.session"))).toBeNull();
    // Signing out revoked the session on the server.
    await expect
      .poll(async () => {
        const res = await fetch(`${gh.url}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: refreshToken,
            client_id: "gatehouse-console",
          }),
        });
        return ((await res.json()) as { error?: string }).error;
      })
      .toBe("invalid_grant");
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
});
