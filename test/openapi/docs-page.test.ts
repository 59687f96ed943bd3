import type { Browser } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { apiServices } from "../../src/service-table.js";
import { browserAvailable, sharedBrowser } from "../helpers/browser.js";
import { useTestServer } from "../helpers/test-server.js";

// /docs in headless Chromium: Swagger UI from the package, under the console's CSP.
const run = browserAvailable();
let browser: Browser;

// The worker's browser (sharedBrowser): stays open; the test closes its context.
beforeAll(async () => {
  if (!run) return;
  browser = await sharedBrowser();
});

describe.skipIf(!run)("/docs", { timeout: 60_000 }, () => {
  // In the block: a skipped block starts no server.
  const ts = useTestServer();

  it("is served under the console's CSP", async () => {
    const res = await fetch(`${ts.url}/docs/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await fetch(`${ts.url}/docs/../package.json`)).status).toBe(404);
    expect((await fetch(`${ts.url}/docs/nope.js`)).status).toBe(404);
  });

  it("renders every service's endpoints with no CSP violation and nothing fetched elsewhere", async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(30_000);
    const foreign: string[] = [];
    const refused: string[] = [];
    await context.route(
      (url) => url.hostname !== "127.0.0.1",
      (route) => {
        foreign.push(route.request().url());
        return route.abort("blockedbyclient");
      },
    );
    const page = await context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) {
        refused.push(m.text());
      }
    });
    try {
      await page.goto(`${ts.url}/docs`);
      await page.locator(".opblock-summary-path").first().waitFor();
      const paths = await page.locator(".opblock-summary-path").allTextContents();
      // The paths show zero-width break hints between segments: compare without them.
      const shown = paths.map((p) => p.replace(/\u200b/g, ""));
      expect(shown).toContain("/iam/v2beta1/groups/{uid}");
      expect(shown).toContain("/sts/exchange");
      const tags = await page.locator(".opblock-tag").allTextContents();
      for (const s of apiServices) {
        expect(tags.some((t) => t.includes(s.name))).toBe(true);
      }
      expect(refused).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
