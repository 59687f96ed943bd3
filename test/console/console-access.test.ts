import { expect, it } from "vitest";
import { describeInBrowser } from "../helpers/browser.js";
import { useWebConsole } from "./web-console.js";

// The web console in headless Chromium against a real server (see console.test.ts): workload
// identities, custom roles, invites, members and effective access.

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describeInBrowser("the web console, identities and access", () => {
  const ui = useWebConsole();
  const { gh, org, openGroup, expectAccessible } = ui;
  it("creates a workload identity and grants it viewer with the pickers", async () => {
    const page = await ui.openAs(org.owner.token, org.uid, "identities");
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
    const page = await ui.openAs(org.owner.token, org.uid, "identities");
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
    const page = await ui.openAs(org.owner.token, org.uid, "roles");
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
    const page = await ui.freshPage();
    await ui.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gh.url });
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

    const page = await ui.openAs(org.owner.token, platform, "members");
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
});
