import { expect, it } from "vitest";
import { axeViolations, describeInBrowser, useConsoleSuite } from "../helpers/browser.js";

// The console's Access requests tab, in headless Chromium against a real server: a viewer asks
// for editor for 8 h, the owner sees the pending request and approves it with a reason, and the
// expiring binding shows in the Role bindings tab; the store holds the answer and the grant.

const hour = 3_600_000;

describeInBrowser("access requests in the console", () => {
  const ui = useConsoleSuite({ org: "requests-console" });
  const { gh, org } = ui;

  /** A fresh page signed in with `token`, at the organization's Access requests tab. */
  async function signedIn(token: string) {
    const page = await ui.freshPage();
    await ui.signIn(token);
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}`);
    await page
      .getByRole("navigation", { name: "Group sections" })
      .getByText("Access requests")
      .click();
    return page;
  }

  it("a viewer asks for editor, the owner approves, and the binding appears", async () => {
    const asker = await gh.makeIdentity(org.uid, ["viewer"]);
    const askerName = (await gh.store.getIdentity(asker.uid))!.name;

    // The viewer asks: no list of pending requests for one who may not answer them.
    let page = await signedIn(asker.token);
    const form = page.getByRole("form", { name: "Request access" });
    await form.getByLabel("Role", { exact: true }).selectOption({ label: "editor" });
    const durations = await form.getByLabel("Duration", { exact: true }).locator("option");
    expect((await durations.allTextContents()).filter((o) => o !== "choose…")).toEqual([
      "1 h",
      "8 h",
      "1 d",
      "7 d",
    ]);
    await form.getByLabel("Duration", { exact: true }).selectOption({ label: "8 h" });
    await form.getByLabel("Reason", { exact: true }).fill("release night");
    await form.getByRole("button", { name: "Request access" }).click();
    await page
      .getByRole("status")
      .getByText("Requested editor at requests-console for 8 h")
      .waitFor();
    expect(await page.getByRole("region", { name: "Pending access requests" }).count()).toBe(0);
    await ui.context.close();

    // The owner answers it.
    page = await signedIn(org.owner.token);
    const pending = page.getByRole("region", { name: "Pending access requests" });
    const row = pending.getByRole("row", {
      name: new RegExp(`${askerName} editor 8 h release night`),
    });
    await row.getByLabel(`Reason for answering ${askerName}`).fill("on the rota");
    const before = Date.now();
    await row.getByRole("button", { name: "Approve" }).click();
    await pending.getByText("None", { exact: true }).waitFor();
    const after = Date.now();
    expect(await axeViolations(page)).toEqual([]);

    await page
      .getByRole("navigation", { name: "Group sections" })
      .getByText("Role bindings")
      .click();
    const bound = page.getByRole("row", { name: new RegExp(`${askerName} editor`) });
    await bound.locator("time").waitFor();

    // What the store holds: the request approved with the reason, and an 8 h binding.
    const [request] = (
      await gh.store.listAccessRequests({
        filters: {},
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      })
    ).items;
    expect(request).toMatchObject({ state: "approved", reviewReason: "on the rota" });
    const [binding] = (
      await gh.store.listRoleBindings({
        filters: { identity: asker.uid },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      })
    ).items.filter((b) => b.expireTime !== undefined);
    expect(binding!.expireTime).toBeGreaterThanOrEqual(before + 8 * hour);
    expect(binding!.expireTime).toBeLessThanOrEqual(after + 8 * hour);
  });
});
