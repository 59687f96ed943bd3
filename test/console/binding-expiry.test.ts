import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  axeViolations,
  browserAvailable,
  launchBrowser,
  screenshotOnFailure,
} from "../helpers/browser.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// The console's grant form offers how long a grant lasts (1 h, 8 h, 1 d, 7 d or until
// revoked) and the bindings list shows when each expires: in headless Chromium, against a real
// server, the expiry checked through the store afterwards.

const run = browserAvailable();
const hour = 3_600_000;

let gh: TestServer;
let browser: Browser;
let page: Page | undefined;
let org: TestOrg;

describe.skipIf(!run)("granting for a while in the console", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    gh = await startTestServer();
    org = await gh.makeOrg("expiry-console");
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await gh?.close();
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === "fail") await screenshotOnFailure(page, "binding-expiry");
  });

  it("grants for 8 h and until revoked, and the list shows each expiry", async () => {
    const worker = await gh.makeIdentity(org.uid);
    const other = await gh.makeIdentity(org.uid);
    const names = new Map<string, string>();
    for (const w of [worker, other]) names.set(w.uid, (await gh.store.getIdentity(w.uid))!.name);
    const context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    await page.goto(`${gh.url}/console/`);
    await page.getByLabel("Token", { exact: true }).fill(org.owner.token);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Your groups" }).waitFor();
    await page.goto(`${gh.url}/console/#/group/${encodeURIComponent(org.uid)}/bindings`);

    const grant = page.getByRole("form", { name: "Grant a role" });
    const lasts = grant.getByLabel("Lasts", { exact: true });
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
    await context.close();
  });
});
