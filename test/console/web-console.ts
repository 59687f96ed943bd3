import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterEach, expect } from "vitest";
import { axeViolations, type ConsoleSuite, useConsoleSuite } from "../helpers/browser.js";

// The web console's suites (console*.test.ts), one topic a file so that the run's two workers
// share them (in one file they were the suite's longest file, 74 s at low load): each file the
// same server, identity provider and checks of every page, set up here once.

/** What useWebConsole gives a describe block: useConsoleSuite's, and the pages' helpers. */
export interface WebConsole extends ConsoleSuite {
  /** The API calls the console made in the block so far: path, content type, Connect version. */
  apiCalls: { path: string; type: string; connect: string }[];
  /** Open the group `uid` at its tab `tab` (subgroups by default). */
  openGroup(uid: string, tab?: string): Promise<void>;
  /**
   * A tab signed in with `token` (signedInTab: the file's own for that token, as sign-in left
   * it), at the group `uid`'s tab `tab`: the page (the suite's `context` is its context). How
   * most tests start.
   */
  openAs(token: string, uid: string, tab?: string): Promise<Page>;
  /**
   * No axe-core violation of any impact on the page. With GATEHOUSE_CONSOLE_SCREENSHOTS set to
   * a directory (docs/console for the README's), a screenshot of the page is kept there too.
   */
  expectAccessible(where: string): Promise<void>;
  /** At the test identity provider's own pages: log in as alice, consent, back at the console. */
  loginAtIdpAsAlice(): Promise<void>;
  /** On the open group's page: create the subgroup `name`, then open it. */
  createAndOpenSubgroup(name: string): Promise<void>;
  /** On the open group's page: rename it to `name`. */
  renameOpenGroup(name: string): Promise<void>;
}

/**
 * The console's suite for a describeInBrowser block (call it first in the block): a server
 * whose login provider is a test identity provider with the person alice, an organization
 * "console-org", one Chromium; after every test, no CSP violation reported and nothing
 * fetched from anywhere but the server and the identity provider.
 */
export function useWebConsole(): WebConsole {
  /** CSP violations the page reported, and requests to anything but the server and the IdP. */
  const pageErrors: string[] = [];
  const foreign: string[] = [];
  const apiCalls: WebConsole["apiCalls"] = [];
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
        if (url.origin !== ui.gh.url && url.origin !== ui.idp.issuer && from === ui.gh.url) {
          foreign.push(r.url());
        }
        if (url.origin === ui.gh.url && /^\/gatehouse\.[\w.]+\/\w+$/.test(url.pathname)) {
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

  // Every test: no CSP violation, nothing fetched from anywhere but the server (and the IdP).
  afterEach(() => {
    const errors = pageErrors.splice(0);
    const elsewhere = foreign.splice(0);
    expect(errors, "CSP violations").toEqual([]);
    expect(elsewhere, "requests to other origins").toEqual([]);
  });

  const helpers = {
    apiCalls,
    async openGroup(uid: string, tab = "subgroups") {
      await ui.page.goto(`${ui.gh.url}/console/#/group/${encodeURIComponent(uid)}/${tab}`);
    },
    async openAs(token: string, uid: string, tab?: string) {
      const page = await ui.signedInTab(token);
      await helpers.openGroup(uid, tab);
      return page;
    },
    async expectAccessible(where: string) {
      const violations = await axeViolations(ui.page);
      expect(violations, `accessibility of ${where}`).toEqual([]);
      const dir = process.env.GATEHOUSE_CONSOLE_SCREENSHOTS;
      if (dir) {
        mkdirSync(dir, { recursive: true });
        await ui.page.screenshot({ path: join(dir, `${where.replace(/\W+/g, "-")}.png`) });
      }
    },
    async loginAtIdpAsAlice() {
      const page = ui.page;
      await page.locator("input[name=login]").fill("alice");
      await page.locator("input[name=password]").fill("any");
      await page.locator("button[type=submit]").click();
      await page.getByRole("button", { name: "Continue" }).click();
      await page.getByRole("heading", { name: "Your groups" }).waitFor();
    },
    async createAndOpenSubgroup(name: string) {
      const page = ui.page;
      const create = page.getByRole("form", { name: "Create a subgroup" });
      await create.getByLabel("Name").fill(name);
      await create.getByRole("button", { name: "Create subgroup" }).click();
      await page.getByRole("link", { name }).click();
      await page.getByRole("heading", { name }).waitFor();
    },
    async renameOpenGroup(name: string) {
      const page = ui.page;
      await page.getByText("Rename or delete this group").click();
      const rename = page.getByRole("form", { name: "Rename group" });
      await rename.getByLabel("New name").fill(name);
      await rename.getByRole("button", { name: "Rename" }).click();
      await page.getByRole("heading", { name }).waitFor();
    },
  };
  // The suite's getters (page, context, the late parts) kept as they are: not spread.
  return Object.assign(Object.create(ui) as ConsoleSuite, helpers) as WebConsole;
}
