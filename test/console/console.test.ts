import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { BrowserContext, Page } from "playwright-core";
import { afterEach, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import {
  createDomainVerification,
  verificationName,
  verificationRecord,
} from "../../src/auth/oauth/domain-verification.js";
import { importAdvisories } from "../../src/import/import-advisories.js";
import { parseRecords } from "../../src/import/read-records.js";
import { newChildUid } from "../../src/uid.js";
import { axeViolations, describeInBrowser, useConsoleSuite } from "../helpers/browser.js";
import { signInAtIdp } from "../helpers/test-idp.js";
import type { TestOrg } from "../helpers/test-server.js";

// The web console in headless Chromium against a real server: every page through
// connect-web, the errors from google.rpc.Status, axe-core on each page.

let context: BrowserContext;
let page: Page;
/** CSP violations the page reported, and requests to anything but the server and the IdP. */
const pageErrors: string[] = [];
const foreign: string[] = [];
/** The API calls the console made: path, content type and Connect protocol version. */
const apiCalls: { path: string; type: string; connect: string }[] = [];

/**
 * No axe-core violation of any impact on the page. With GATEHOUSE_CONSOLE_SCREENSHOTS set to a
 * directory (docs/console for the README's), a screenshot of the page is kept there too.
 */
async function expectAccessible(where: string) {
  const violations = await axeViolations(page);
  expect(violations, `accessibility of ${where}`).toEqual([]);
  const dir = process.env.GATEHOUSE_CONSOLE_SCREENSHOTS;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, `${where.replace(/\W+/g, "-")}.png`) });
  }
}

/** At the test identity provider's own pages: log in as alice, consent, back at the console. */
async function loginAtIdpAsAlice() {
  await page.locator("input[name=login]").fill("alice");
  await page.locator("input[name=password]").fill("any");
  await page.locator("button[type=submit]").click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("heading", { name: "Your groups" }).waitFor();
}

/** On the open group's page: create the subgroup `name`, then open it. */
async function createAndOpenSubgroup(name: string) {
  const create = page.getByRole("form", { name: "Create a subgroup" });
  await create.getByLabel("Name").fill(name);
  await create.getByRole("button", { name: "Create subgroup" }).click();
  await page.getByRole("link", { name }).click();
  await page.getByRole("heading", { name }).waitFor();
}

/** On the open group's page: rename it to `name`. */
async function renameOpenGroup(name: string) {
  await page.getByText("Rename or delete this group").click();
  const rename = page.getByRole("form", { name: "Rename group" });
  await rename.getByLabel("New name").fill(name);
  await rename.getByRole("button", { name: "Rename" }).click();
  await page.getByRole("heading", { name }).waitFor();
}

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describeInBrowser("the web console", () => {
  const ui = useConsoleSuite({
    idpPeople: {
      alice: { name: "Alice Console", email: "alice@example.com", email_verified: true },
    },
    env: {
      // The organization provider of the sign-in-by-name test is the test IdP on loopback.
      GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
      // Repos show pull references on this registry host (nothing is fetched from it).
      GATEHOUSE_REGISTRY_AUDIENCE: "registry.example.com",
    },
    // Every page: what it asks of other origins and of the API, and the CSP violations it reports.
    onPage(page, context) {
      context.on("request", (r) => {
        const url = new URL(r.url());
        const from = new URL(r.frame().url() || r.url()).origin;
        if (url.origin !== gh.url && url.origin !== idp.issuer && from === gh.url) {
          foreign.push(r.url());
        }
        if (url.origin === gh.url && /^\/gatehouse\.[\w.]+\/\w+$/.test(url.pathname)) {
          apiCalls.push({
            path: url.pathname,
            type: r.headers()["content-type"] ?? "",
            connect: r.headers()["connect-protocol-version"] ?? "",
          });
        }
      });
      page.on("console", (m) => {
        if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) {
          pageErrors.push(m.text());
        }
      });
    },
  });
  const { gh, idp, org } = ui;
  async function openGroup(uid: string, tab = "subgroups") {
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(uid)}/${tab}`);
  }
  /** A fresh tab (and sessionStorage) for a test (ui.freshPage), as `page` and `context`. */
  async function freshPage() {
    page = await ui.freshPage();
    context = ui.context;
  }

  // Every test: no CSP violation, nothing fetched from anywhere but the server (and the IdP).
  afterEach(() => {
    const errors = pageErrors.splice(0);
    const elsewhere = foreign.splice(0);
    expect(errors, "CSP violations").toEqual([]);
    expect(elsewhere, "requests to other origins").toEqual([]);
  });

  it("is served with a strict CSP and cacheable hashed assets", async () => {
    const res = await fetch(`${gh.url}/console/`);
    expect(res.status).toBe(200);
    const csp = new Map(
      (res.headers.get("content-security-policy") ?? "")
        .split(";")
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values.join(" ")]),
    );
    // Scripts and styles from the console's own files only: nothing inline, nothing elsewhere.
    expect(csp.get("default-src")).toBe("'none'");
    expect(csp.get("script-src")).toBe("'self'");
    expect(csp.get("style-src")).toBe("'self'");
    expect(csp.get("connect-src")).toBe("'self'");
    expect(csp.get("frame-ancestors")).toBe("'none'");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const html = await res.text();
    // No inline script or style for the CSP to have to allow.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son\w+=/);
    // The icon is inline (CSP img-src allows data:), so nothing asks for /favicon.ico.
    expect(html).toMatch(/<link\s+rel="icon"\s+href="data:image\/svg\+xml,/);
    const script = /src="\/console\/(main-[\w-]+\.js)"/.exec(html)?.[1];
    const style = /href="\/console\/(styles-[\w-]+\.css)"/.exec(html)?.[1];
    for (const [file, type] of [
      [script, "text/javascript"],
      [style, "text/css"],
    ]) {
      const asset = await fetch(`${gh.url}/console/${file}`);
      expect(asset.status, file).toBe(200);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(asset.headers.get("content-type")).toContain(type);
    }
    expect((await fetch(`${gh.url}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${gh.url}/console/%2e%2e%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${gh.url}/console/nope.js`)).status).toBe(404);
    const moved = await fetch(`${gh.url}/console`, { redirect: "manual" });
    expect(moved.headers.get("location")).toBe("/console/");
  });

  it("signs in with a token; creates, renames, fails to delete the parent, deletes a subgroup", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await expectAccessible("home");
    await page
      .getByRole("row", { name: /^console-org owner/ })
      .getByRole("link")
      .click();
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

    await createAndOpenSubgroup("team-a");
    await renameOpenGroup("team-b");

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
    await page.getByText("None", { exact: true }).waitFor();

    // Every call went through connect-web: the Connect protocol, JSON, to the generated paths.
    expect(apiCalls.map((c) => c.path)).toEqual(
      expect.arrayContaining([
        "/gatehouse.iam.v2beta1.CallerService/GetCaller",
        "/gatehouse.iam.v2beta1.GroupsService/ListGroups",
        "/gatehouse.iam.v2beta1.GroupsService/CreateGroup",
        "/gatehouse.iam.v2beta1.GroupsService/UpdateGroup",
        "/gatehouse.iam.v2beta1.GroupsService/DeleteGroup",
      ]),
    );
    for (const call of apiCalls) {
      expect(call.type, call.path).toBe("application/json");
      expect(call.connect, call.path).toBe("1");
    }

    // The token is in this tab's sessionStorage only: no cookie, nothing in localStorage.
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    const kept = await page.evaluate(() => sessionStorage.getItem("gatehouse.session"));
    expect(kept).toContain(org.owner.token);
    // Signing out forgets it; a reload asks for a token again.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in with a token" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await page.getByRole("heading", { name: "Sign in with a token" }).waitFor();
  });

  it("offers a viewer no action it may not take", async () => {
    const viewer = await gh.makeIdentity(org.uid, ["viewer"]);
    await freshPage();
    await ui.signIn(viewer.token);
    await openGroup(org.uid);
    await page.getByRole("region", { name: "Subgroups" }).getByRole("table").waitFor();
    expect(await page.getByRole("form", { name: "Create a subgroup" }).count()).toBe(0);
    expect(await page.getByText("Rename or delete this group").count()).toBe(0);
    await openGroup(org.uid, "members");
    await page.getByRole("table", { name: "Members" }).waitFor();
    expect(await page.getByRole("button", { name: /^Revoke/ }).count()).toBe(0);
    expect(await page.getByRole("form", { name: "Grant a role here" }).count()).toBe(0);
  });

  it("shows a viewer bound at a subgroup the tree from that group, with no 4xx in the browser console", async () => {
    const made = async (parent: string, name: string) => {
      const res = await fetch(`${gh.url}/iam/v2beta1/groups/${parent}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ name }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { uid: string }).uid;
    };
    const middle = await made(org.uid, "middle");
    const leaf = await made(middle, "leaf");
    const viewer = await gh.makeIdentity(middle, ["viewer"]);
    await freshPage();
    const noise: string[] = [];
    // What the browser console would show as "Failed to load resource": a 4xx answer.
    page.on("response", (r) => {
      if (r.status() >= 400 && r.status() < 500)
        noise.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await ui.signIn(viewer.token);
    await openGroup(leaf, "tree");
    const tree = page.getByRole("navigation", { name: "Group tree" });
    // The ancestor the viewer may read, open down to this group; not the organization above.
    await tree.getByRole("link", { name: "middle" }).waitFor();
    await tree.getByRole("link", { name: "leaf" }).waitFor();
    expect(await tree.getByRole("link", { name: "console-org" }).count()).toBe(0);
    for (const tab of ["Subgroups", "Members", "Repos"]) {
      await page.getByRole("link", { name: tab, exact: true }).click();
      await page.getByRole("heading", { level: 2 }).first().waitFor();
    }
    expect(noise).toEqual([]);
  });

  it("lists an owner's change on the Events page, newest first; a viewer is not offered it", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid);
    await page.getByRole("heading", { name: "console-org" }).waitFor();
    await createAndOpenSubgroup("audited");
    await renameOpenGroup("audited-2");

    await page.getByRole("link", { name: "console-org" }).click();
    await page.getByRole("link", { name: "Events", exact: true }).click();
    const events = page.getByRole("region", { name: "Events" });
    // Newest first: the rename (its changed field), then the creation, both by the owner.
    const rows = events.getByRole("row");
    await rows.nth(1).getByText("group updated").waitFor();
    // The change with its old and new value.
    expect(await rows.nth(1).textContent()).toMatch(
      /group updatedaudited-2.+name: audited → audited-2$/,
    );
    expect(await rows.nth(2).textContent()).toMatch(/group createdaudited-2/);
    const owner = await page.evaluate(async (token) => {
      const r = await fetch("/iam/v2beta1/caller", {
        headers: { authorization: `Bearer ${token}` },
      });
      return ((await r.json()) as { identity: { uid: string } }).identity.uid;
    }, org.owner.token);
    expect(await rows.nth(1).getByTitle(owner, { exact: true }).count()).toBe(1);
    await expectAccessible("events");

    // Filtered by a type: only the updates.
    await events.getByLabel("Type").fill("dev.gatehouse.iam.group.updated.v1");
    await events.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rows.count()).toBeGreaterThan(1);
    await expect
      .poll(async () => (await events.getByRole("cell", { name: "group created" }).count()) === 0)
      .toBe(true);
    expect(await events.getByRole("cell", { name: "group updated" }).count()).toBeGreaterThan(0);
    await events.getByLabel("Type").fill("");
    await events.getByRole("button", { name: "Filter" }).click();

    // A grant made meanwhile (through the API): Refresh shows it, who as which role where.
    const grantee = await gh.makeIdentity(org.uid);
    await gh.store.updateIdentity(grantee.uid, { name: "reviewed person" }, Date.now());
    const granted = await fetch(`${gh.url}/iam/v2beta1/roleBindings/${org.uid}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({
        identityUid: grantee.uid,
        roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
      }),
    });
    expect(granted.status).toBe(200);
    // A type picker in words, and an actor picker: grants only, then groups by the owner.
    const what = page.getByRole("combobox", { name: "What" });
    await what.selectOption({ label: "grants and revocations" });
    await expect
      .poll(async () => (await events.getByRole("cell", { name: /^group / }).count()) === 0)
      .toBe(true);
    await events.getByRole("cell", { name: "reviewed person as viewer at console-org" }).waitFor();
    await what.selectOption({ label: "groups" });
    await events.getByRole("cell", { name: "group created" }).first().waitFor();
    await page.getByRole("combobox", { name: "By" }).selectOption({ value: owner });
    await events.getByRole("cell", { name: "group updated" }).first().waitFor();
    await events.getByRole("button", { name: "Refresh" }).click();
    await events.getByRole("cell", { name: "group updated" }).first().waitFor();

    const viewer = await gh.makeIdentity(org.uid, ["viewer"]);
    await freshPage();
    await ui.signIn(viewer.token);
    const caps = page.waitForResponse((r) => r.url().endsWith("/ListCallerCapabilities"));
    await openGroup(org.uid, "members");
    await (await caps).finished();
    await page.getByRole("table", { name: "Members" }).waitFor();
    expect(await page.getByRole("link", { name: "Members", exact: true }).count()).toBe(1);
    expect(await page.getByRole("link", { name: "Events", exact: true }).count()).toBe(0);
  });

  it("tells a caller whose role went while the page was open which capability it lacks (403)", async () => {
    const editor = await gh.makeIdentity(org.uid, ["owner"]);
    await freshPage();
    await ui.signIn(editor.token);
    await openGroup(org.uid);
    const create = page.getByRole("form", { name: "Create a subgroup" });
    await create.getByLabel("Name").fill("not-allowed");
    const bindings = await gh.store.listRoleBindings({
      filters: { identity: editor.uid },
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 10,
    });
    for (const b of bindings.items) await gh.store.deleteRoleBinding(b.uid);
    await create.getByRole("button", { name: "Create subgroup" }).click();
    const alert = create.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(
      /^PermissionDenied: You do not hold the capability groups\.create here/,
    );
  });

  it("creates a workload identity and grants it viewer with the pickers", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "identities");
    const form = page.getByRole("form", { name: "Create a workload identity" });
    await form.getByLabel("Name", { exact: true }).fill("ci-deployer");
    await form.getByLabel(/^Issuer/).fill("https://ci.example.com");
    await form.getByLabel(/^Subject/).fill("repo:acme/app");
    await form.getByRole("button", { name: "Create identity" }).click();
    await page.getByRole("button", { name: "ci-deployer" }).waitFor();
    await expectAccessible("identities");

    await page.getByRole("link", { name: "Role bindings" }).click();
    const grant = page.getByRole("form", { name: "Grant a role" });
    await grant.getByLabel("Identity", { exact: true }).selectOption({ label: "ci-deployer" });
    await grant.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await grant.getByRole("button", { name: "Grant" }).click();
    const row = page.getByRole("row", { name: /ci-deployer viewer console-org/ });
    await row.waitFor();
    await expectAccessible("role bindings");

    // A person's identity (the owner's: it lives in no group) shown from its binding.
    const owner = await gh.store.getIdentity(org.owner.uid);
    await page
      .getByRole("row", { name: /owner console-org/ })
      .getByRole("button", { name: owner?.name ?? "" })
      .click();
    const shown = page.getByRole("region", { name: `Identity ${owner?.name}` });
    await shown.getByText("person", { exact: true }).waitFor();
    // makeOrg's person: issuer https://users.test, subject person-<n>.
    await shown.getByText("https://users.test", { exact: true }).waitFor();
    await shown.getByText(/^person-\d+$/).waitFor();

    // Revoked: the row goes.
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.waitFor({ state: "detached" });
  });

  it("creates an identity from patterns (a bad one shown at its field), edits and deletes it", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "identities");
    const form = page.getByRole("form", { name: "Create a workload identity" });
    await form.getByLabel("Name", { exact: true }).fill("deploy-any");
    await form.getByLabel(/^or issuer pattern/).fill("https://ci\\.example\\.com/.*");
    const subjectPattern = form.getByLabel("or subject pattern (RE2)");
    await subjectPattern.fill("repo:acme/(");
    await form.getByRole("button", { name: "Create identity" }).click();
    // The API's BadRequest violation for claimMatch.subjectPattern, beside that field.
    await expect.poll(() => subjectPattern.getAttribute("aria-invalid")).toBe("true");
    const describedBy = await subjectPattern.getAttribute("aria-describedby");
    expect(await page.locator(`#${describedBy}`).textContent()).toBe(
      "is not a valid regular expression",
    );
    await subjectPattern.fill("repo:acme/.*");
    // Extra claim conditions: one exact, one a pattern.
    await form.getByLabel(/^Other claims that must equal/).fill("repository_owner=acme");
    await form.getByLabel(/^Other claims that must match/).fill("ref=refs/heads/.*");
    await form.getByRole("button", { name: "Create identity" }).click();
    await page.getByRole("button", { name: "deploy-any" }).click();
    const detail = page.getByRole("region", { name: "Identity deploy-any" });
    await detail.getByText("https://ci\\.example\\.com/.* (pattern)").waitFor();
    await detail.getByText("repo:acme/.* (pattern)").waitFor();
    await detail.getByRole("definition").filter({ hasText: "equals acme" }).waitFor();
    await detail
      .getByRole("definition")
      .filter({ hasText: "matches refs/heads/.* (pattern)" })
      .waitFor();

    // Edit: a new name, and an exact subject instead of the pattern.
    const edit = detail.getByRole("form", { name: "Edit identity" });
    await edit.getByLabel("Name", { exact: true }).fill("deploy-main");
    await edit.getByLabel("or subject pattern (RE2)").fill("");
    await edit.getByLabel(/^Subject/).fill("repo:acme/app:ref:refs/heads/main");
    await edit
      .getByLabel(/^Other claims that must equal/)
      .fill("repository_owner=acme\nenvironment=prod");
    await edit.getByRole("button", { name: "Save" }).click();
    const edited = page.getByRole("region", { name: "Identity deploy-main" });
    await edited.getByText("repo:acme/app:ref:refs/heads/main", { exact: true }).waitFor();
    await edited.getByText("https://ci\\.example\\.com/.* (pattern)").waitFor();
    await edited.getByRole("definition").filter({ hasText: "equals prod" }).waitFor();
    await page.getByRole("region", { name: "Identities" }).getByText("deploy-main").waitFor();
    await page.reload();
    await page.getByRole("button", { name: "deploy-main" }).click();
    await page
      .getByRole("region", { name: "Identity deploy-main" })
      .getByText("repo:acme/app:ref:refs/heads/main", { exact: true })
      .waitFor();
    await expectAccessible("an identity");

    await page.getByRole("button", { name: "Delete identity" }).click();
    await page.getByRole("button", { name: "deploy-main" }).waitFor({ state: "detached" });
    await page.reload();
    await page.getByRole("region", { name: "Identities" }).getByRole("table").waitFor();
    expect(await page.getByRole("button", { name: "deploy-main" }).count()).toBe(0);
  });

  it("creates a custom role by picking capabilities, and grants it with the pickers", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "roles");
    await page.getByRole("row", { name: /^viewer built-in/ }).waitFor();
    await expectAccessible("roles");
    const form = page.getByRole("form", { name: "Create a custom role" });
    await form.getByLabel("Name", { exact: true }).fill("puller");
    // None picked: the API says so, beside the capabilities.
    await form.getByRole("button", { name: "Create role" }).click();
    const caps = form.getByRole("group", { name: "Capabilities" });
    await expect.poll(() => caps.getAttribute("aria-describedby")).toBeTruthy();
    const why = await page.locator(`#${await caps.getAttribute("aria-describedby")}`).textContent();
    expect(why).toMatch(/at least one/);
    await form.getByLabel("repo.list", { exact: true }).check();
    await form.getByLabel("registry.pull", { exact: true }).check();
    await form.getByRole("button", { name: "Create role" }).click();
    await page
      .getByRole("row", { name: /^puller custom registry\.pull, repo\.list Delete$/ })
      .waitFor();

    const ci = await gh.makeIdentity(org.uid);
    const name = (await gh.store.getIdentity(ci.uid))?.name as string;
    await page.getByRole("link", { name: "Role bindings" }).click();
    const grant = page.getByRole("form", { name: "Grant a role" });
    await grant.getByLabel("Identity", { exact: true }).selectOption({ label: name });
    await grant.getByLabel("Role", { exact: true }).selectOption({ label: "puller" });
    await grant.getByRole("button", { name: "Grant" }).click();
    await page
      .getByRole("row", { name: `${name} puller console-org until revoked Revoke` })
      .waitFor();
    // The bindings' name filter is their role's name.
    const bindings = page.getByRole("region", { name: "Role bindings" });
    await bindings.getByLabel("Role name", { exact: true }).fill("puller");
    await bindings.getByRole("button", { name: "Filter" }).click();
    await bindings.getByText("1–1 of 1").waitFor();
  });

  it("creates an invite and shows its code once", async () => {
    await freshPage();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "invites");
    const form = page.getByRole("form", { name: "Create an invite" });
    await form.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await form.getByRole("button", { name: "Create invite" }).click();
    const code = await page.locator("#invite-code").textContent();
    expect(code).toMatch(/^\S{16,}$/);
    await page.getByText(`gatehouse iam invites redeem ${code}`).waitFor();
    await page.getByRole("button", { name: "Copy code" }).click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(code);
    await expectAccessible("invites");
    await page.getByRole("button", { name: "Done" }).click();
    await page.reload();
    await page.getByRole("heading", { name: "Invites" }).waitFor();
    await page.getByText("1–1 of 1").waitFor();
    await page.getByRole("row", { name: /viewer anyone with the code/ }).waitFor();
    expect(await page.content()).not.toContain(code as string);
    await page
      .getByRole("region", { name: "Invites" })
      .getByRole("button", { name: "Delete" })
      .click();
    await page.getByText("None", { exact: true }).waitFor();
  });

  it("adds and deletes an organization's identity provider, and associates accounts", async () => {
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "providers");
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
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "repos");
    const form = page.getByRole("form", { name: "Create a repo" });
    await form.getByLabel("Name", { exact: true }).fill("app");
    await form.getByRole("button", { name: "Create repo" }).click();
    // The pull reference the server computed, copied by its button.
    const ref = "registry.example.com/console-org/app";
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
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
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "repos");
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
    await freshPage();
    await ui.signIn(org.owner.token);
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
    const list = page.getByRole("region", { name: "Subgroups" });
    await list.getByLabel("Order").selectOption("name desc");
    await page.getByText("1–50 of 120").waitFor();
    const names = list.getByRole("table").getByRole("link");
    await expect.poll(() => names.first().textContent()).toBe("g119");
    expect(await names.nth(49).textContent()).toBe("g070");
    // The name filter: an exact name, the count from totalCount.
    await list.getByLabel("Name", { exact: true }).fill("g042");
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByText("1–1 of 1").waitFor();
    expect(await names.allTextContents()).toEqual(["g042"]);
    await list.getByLabel("Name", { exact: true }).fill("");
    await list.getByRole("button", { name: "Filter" }).click();
    await page.getByText("1–50 of 120").waitFor();
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
    await freshPage();
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
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "providers");
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
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
    await freshPage();
    await ui.signIn(org.owner.token);
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

  it("signs in through the login provider in the browser, and signs out", async () => {
    await freshPage();
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

  it("shows members with their roles, explains access, and walks the group tree", async () => {
    // console-org > platform > squad; ci-bot (a workload of platform) is a viewer of the whole
    // organization, deployer an editor of platform itself.
    const mk = async (parent: string, name: string) => {
      const res = await fetch(`${gh.url}/iam/v2beta1/groups/${parent}`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ name }),
      });
      return ((await res.json()) as { uid: string }).uid;
    };
    const platform = await mk(org.uid, "platform");
    await mk(platform, "squad");
    const named = async (uid: string, name: string) => {
      await gh.store.updateIdentity(uid, { name }, Date.now());
      return uid;
    };
    await named((await gh.makeIdentity(platform, ["viewer"], org.uid)).uid, "ci-bot");
    await named((await gh.makeIdentity(platform, ["editor"], platform)).uid, "deployer");

    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(platform, "members");
    const members = page.getByRole("table", { name: "Members" });
    await members
      .getByRole("row", { name: /^ci-bot workload viewer inherited from console-org/ })
      .waitFor();
    await members.getByRole("row", { name: /^deployer workload editor here/ }).waitFor();
    const owner = (await gh.store.getIdentity(org.owner.uid))?.name as string;
    await members
      .getByRole("row", { name: new RegExp(`^${owner} person owner inherited`) })
      .waitFor();
    // No uid on the page but in titles and details blocks.
    expect(await members.textContent()).not.toMatch(/[0-9a-f]{40}/);
    await expectAccessible("members");

    // Grant through pickers that search by name; the owner cannot grant advisories.admin, so
    // it is not offered.
    const grant = page.getByRole("form", { name: "Grant a role here" });
    const roleSelect = grant.getByLabel("Role", { exact: true });
    await expect
      .poll(async () => (await roleSelect.locator("option").allTextContents()).join(","))
      .toContain("editor");
    expect(await roleSelect.locator("option").allTextContents()).not.toContain("advisories.admin");
    await grant.getByLabel("Search member by name").fill("ci-b");
    await grant.getByLabel("Search role by name").fill("edito");
    await grant.getByRole("button", { name: "Grant" }).click();
    const ciRow = members.getByRole("row", { name: /^ci-bot/ });
    const revoke = ciRow.getByRole("button", { name: "Revoke editor" });
    await revoke.click();
    await revoke.waitFor({ state: "detached" });
    await members.getByRole("row", { name: /^ci-bot workload viewer inherited/ }).waitFor();

    // Effective access, explained.
    await page.getByRole("link", { name: "Access", exact: true }).click();
    const ask = page.getByRole("form", { name: "Why may someone do something here" });
    await ask.getByLabel("Member", { exact: true }).selectOption({ label: "ci-bot" });
    await ask.getByLabel("Capability", { exact: true }).selectOption("repo.create");
    await ask.getByRole("button", { name: "Explain" }).click();
    const why = page.getByRole("region", { name: "Access explained" });
    await why
      .getByRole("heading", { name: "ci-bot may not use repo.create in platform" })
      .waitFor();
    await why.getByText(/applies here, but the role does not include repo\.create/).waitFor();
    // The roles that would grant it, built-in and the organization's own.
    await why.getByText(/^Roles that would grant repo\.create: editor, owner[,.]/).waitFor();
    await ask.getByLabel("Member", { exact: true }).selectOption({ label: "deployer" });
    await ask.getByLabel("Capability", { exact: true }).selectOption("repo.create");
    await ask.getByRole("button", { name: "Explain" }).click();
    await why.getByRole("heading", { name: "deployer may use repo.create in platform" }).waitFor();
    await why.getByText("bound at this group itself").waitFor();
    await why.scrollIntoViewIfNeeded();
    // What each capability lets the caller do, in words.
    const mine = page.locator("dl.caps");
    await mine.getByRole("definition").first().waitFor();
    expect(
      await mine.locator("div").filter({ hasText: "role_bindings.create" }).textContent(),
    ).toBe("role_bindings.createCreate role bindings: who holds which role where");
    await expectAccessible("access");

    // The tree: open down to this group; open it to reach its child, by name.
    await page.getByRole("link", { name: "Tree", exact: true }).click();
    const tree = page.getByRole("navigation", { name: "Group tree" });
    await tree.getByRole("link", { name: "console-org" }).waitFor();
    await tree.getByRole("link", { name: "squad" }).waitFor();
    await expectAccessible("tree");
    await tree.getByRole("link", { name: "squad" }).click();
    await page.getByRole("heading", { name: "squad", level: 1 }).waitFor();
    const crumbs = page.getByRole("navigation", { name: "Breadcrumb" });
    // The ancestors' names arrive after the heading: poll, as a person would look again.
    await expect.poll(() => crumbs.textContent()).toBe("Home / console-org / platform");
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
    await freshPage();
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
    await freshPage();
    await ui.signIn(org.owner.token);
    await openGroup(org.uid, "providers");
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

    await context.close();
    await freshPage();
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
    await freshPage();
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
