import { expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { describeInBrowser } from "../helpers/browser.js";
import { useWebConsole } from "./web-console.js";

// The web console in headless Chromium against a real server: every page through
// connect-web, the errors from google.rpc.Status, axe-core on each page. This file: serving,
// signing in with a token, groups, what a viewer is offered, the Events page. Its siblings
// console-*.test.ts: identities and access, resources, signing in through providers (one file
// a topic, so that two workers share them; web-console.ts sets each up the same way).

// A browser under a loaded CI machine is slow: generous limits, and a screenshot on failure.
describeInBrowser("the web console", () => {
  const ui = useWebConsole();
  const { gh, org, apiCalls, openGroup, expectAccessible, createAndOpenSubgroup, renameOpenGroup } =
    ui;
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
    const page = await ui.freshPage();
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
    expect(await ui.context.cookies()).toEqual([]);
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
    const page = await ui.openAs(viewer.token, org.uid);
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
    const page = await ui.freshPage();
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
    let page = await ui.openAs(org.owner.token, org.uid);
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
    page = await ui.freshPage();
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
    const page = await ui.openAs(editor.token, org.uid);
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
    const page = await ui.openAs(org.owner.token, parent.uid);
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
});
