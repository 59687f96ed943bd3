import { expect, it } from "vitest";
import { axeViolations, describeInBrowser, useConsoleSuite } from "../helpers/browser.js";

// The console's grant form offers how long a grant lasts (1 h, 8 h, 1 d, 7 d or until
// revoked) and the bindings list shows when each expires: in headless Chromium, against a real
// server, the expiry checked through the store afterwards.

const hour = 3_600_000;

describeInBrowser("granting for a while in the console", () => {
  const ui = useConsoleSuite({ org: "expiry-console" });
  const { gh, org } = ui;

  it("grants for 8 h and until revoked, and the list shows each expiry", async () => {
    const worker = await gh.makeIdentity(org.uid);
    const other = await gh.makeIdentity(org.uid);
    const names = new Map<string, string>();
    for (const w of [worker, other]) names.set(w.uid, (await gh.store.getIdentity(w.uid))!.name);
    const page = await ui.freshPage();
    await ui.signIn(org.owner.token);
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/bindings`);

    const grant = page.getByRole("form", { name: "Grant a role" });
    const lasts = grant.getByLabel("Lasts", { exact: true });
    // allTextContents does not wait: the form first (a loaded machine renders it late).
    await lasts.waitFor();
    const offered = await lasts.locator("option").allTextContents();
    expect(offered.filter((o) => o !== "choose…")).toEqual([
      "until revoked",
      "for 1 h",
      "for 8 h",
      "for 1 d",
      "for 7 d",
    ]);

    const before = Date.now();
    await grant
      .getByLabel("Identity", { exact: true })
      .selectOption({ label: names.get(worker.uid)! });
    await grant.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await lasts.selectOption({ label: "for 8 h" });
    await grant.getByRole("button", { name: "Grant" }).click();
    const timed = page.getByRole("row", { name: new RegExp(`${names.get(worker.uid)} viewer`) });
    await timed.locator("time").waitFor();
    const after = Date.now();

    await grant
      .getByLabel("Identity", { exact: true })
      .selectOption({ label: names.get(other.uid)! });
    await grant.getByLabel("Role", { exact: true }).selectOption({ label: "viewer" });
    await lasts.selectOption({ label: "until revoked" });
    await grant.getByRole("button", { name: "Grant" }).click();
    const lasting = page.getByRole("row", { name: new RegExp(`${names.get(other.uid)} viewer`) });
    await lasting.getByText("until revoked").waitFor();

    // What was made: 8 hours from the click, and one without expiry.
    const [made] = (
      await gh.store.listRoleBindings({
        filters: { identity: worker.uid },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      })
    ).items;
    expect(made!.expireTime).toBeGreaterThanOrEqual(before + 8 * hour);
    expect(made!.expireTime).toBeLessThanOrEqual(after + 8 * hour);
    expect(await timed.locator("time").getAttribute("datetime")).toBe(
      new Date(made!.expireTime!).toISOString(),
    );
    const [kept] = (
      await gh.store.listRoleBindings({
        filters: { identity: other.uid },
        order: { field: "uid", desc: false },
        skip: 0,
        limit: 10,
      })
    ).items;
    expect(kept!.expireTime).toBeUndefined();
    expect(await axeViolations(page)).toEqual([]);
  });
});
