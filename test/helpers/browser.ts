import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, onTestFinished } from "vitest";
import { late } from "./late.js";
import { startTestIdp, type TestIdp, type TestIdpOptions } from "./test-idp.js";
import {
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
  type TestServerOptions,
} from "./test-server.js";

/** Debian's Chromium, which CI installs with apt-get (.ci/run). */
export const chromiumPath = process.env.GATEHOUSE_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Whether browser tests can run here. In CI they must: a missing Chromium fails there. Outside
 * CI they skip with one loud line saying how to install it.
 */
export function browserAvailable(): boolean {
  if (existsSync(chromiumPath)) return true;
  if (process.env.CI) {
    throw new Error(`CI: no Chromium at ${chromiumPath}; .ci/run installs it with apt-get`);
  }
  console.warn(
    `\n*** browser tests SKIPPED: no Chromium at ${chromiumPath}. Install it with ` +
      "`apt-get install chromium` (Debian) or set GATEHOUSE_CHROMIUM. ***\n",
  );
  return false;
}

/**
 * Playwright's own `--disable-features` list (playwright-core 1.65.1, its chromiumSwitches).
 * Chromium keeps only the last `--disable-features` of its command line, so the one we add
 * must repeat it; launchBrowser checks that it still does.
 */
const playwrightDisabledFeatures = [
  "AvoidUnnecessaryBeforeUnloadCheckSync",
  "DestroyProfileOnBrowserClose",
  "HttpsUpgrades",
  "HttpsFirstBalancedModeAutoEnable",
  "LensOverlay",
  "MediaRouter",
  "PaintHolding",
  "ThirdPartyStoragePartitioning",
  "AvoidCorsURLLoaderRestartOnRedirect",
  "TcpPortRandomizationWin",
  "OptimizationHints",
  "NetworkTimeServiceQuerying",
  "AimEnabled",
  "PreconnectToSearch",
  "msForceBrowserSignIn",
  "msEdgeUpdateLaunchServicesPreferredVersion",
];

/**
 * What the tests turn off besides: the address bar's WebUI popups. Headless Chromium still
 * builds a window's top chrome, and every new window (a context's first page) loaded both
 * popups, never shown, in a renderer of its own: about 1 s of CPU a page, a quarter of
 * console.test.ts's (31 s of CPU against 22-25 s without, load 3-10).
 */
const disabledFeatures = [
  ...playwrightDisabledFeatures,
  "WebUIOmniboxPopup",
  "WebUIOmniboxAimPopup",
];

/** Start headless Chromium with the flags this machine's closed network needs. */
export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--disable-features=${disabledFeatures.join(",")}`,
    ],
  });
  const lost = featuresOverridden();
  if (lost.length > 0) {
    await browser.close();
    throw new Error(
      `test/helpers/browser.ts: playwright now also disables ${lost.join(", ")}; add them to ` +
        "playwrightDisabledFeatures (Chromium keeps only our --disable-features, the last one)",
    );
  }
  return browser;
}

/**
 * The features an earlier `--disable-features` of a Chromium this process started (its
 * command line in /proc; none where there is no /proc) disables and its last one does not.
 */
function featuresOverridden(): string[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const lost = new Set<string>();
  for (const pid of pids) {
    let argv: string[];
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== process.pid) continue;
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    const lists = argv
      .filter((a) => a.startsWith("--disable-features="))
      .map((a) => a.slice("--disable-features=".length).split(","));
    const kept = new Set(lists.at(-1));
    for (const f of lists.flat()) if (!kept.has(f)) lost.add(f);
  }
  return [...lost];
}

let shared: Promise<Browser> | undefined;

/**
 * The worker's Chromium: launched on first use, then shared by every file the worker runs (the
 * browser tier's workers run file after file, vitest.config.ts) and closed with the worker
 * process (playwright kills it on exit). A file takes its own contexts from it (no cookie,
 * storage, cache or permission shared: a context is a fresh profile) and closes them, never the
 * browser. One that crashed or was closed is launched again. A launch took about 1.5 s of wall
 * time a file (load 10 on 2 cores).
 */
export async function sharedBrowser(): Promise<Browser> {
  const running = await shared?.catch(() => undefined);
  if (running?.isConnected()) return running;
  shared = launchBrowser();
  return shared;
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);

/** Every accessibility violation of the page, whatever its impact, as axe-core finds them. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol: the page's CSP (no inline scripts) stays enforced.
  // Once a document: evaluating its 650 kB took about 0.3 s each time (load 8 on 2 cores), and
  // a test checks several views of one page (a new document has no axe and gets it again).
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(axeSource);
  const result = (await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is a global the script tag defines
    const g = globalThis as any;
    return g.axe.run(g.document, { resultTypes: ["violations"] });
  })) as { violations: { id: string; impact: string; help: string; nodes: unknown[] }[] };
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} [${v.nodes.length} nodes]`);
}

/** Keep a screenshot of a failed test under test-results/ (a CI artifact; gitignored). */
export async function screenshotOnFailure(page: Page | undefined, name: string): Promise<void> {
  if (!page) return;
  const dir = join(process.cwd(), "test-results");
  mkdirSync(dir, { recursive: true });
  await page
    .screenshot({ path: join(dir, `${name.replace(/\W+/g, "-")}.png`), fullPage: true })
    .catch(() => undefined);
}

/**
 * A describe block of browser tests: skipped (loudly) where there is no Chromium outside CI,
 * failed in CI (browserAvailable), with a generous limit a test for a loaded machine.
 */
export function describeInBrowser(name: string, body: () => void, timeoutMs = 60_000): void {
  describe.skipIf(!browserAvailable())(name, { timeout: timeoutMs }, body);
}

/** How useConsoleSuite starts its server. */
export interface ConsoleSuiteOptions {
  /** The organization's name (made through the store, owned by a new person). */
  org?: string;
  /** The server's settings (startTestServer's env), besides the login provider's. */
  env?: Record<string, string>;
  /** The server's options besides its port (a clock, a log stream). */
  server?: Omit<TestServerOptions, "port">;
  /**
   * Start a test identity provider (test-idp.ts) with these people, and make it the server's
   * login provider, "Test IdP" (the server on a port known beforehand, for its redirect URI).
   */
  idpPeople?: TestIdpOptions["people"];
  /** Called with each fresh page before a test uses it: listeners, recorders, permissions. */
  onPage?: (page: Page, context: BrowserContext) => void | Promise<void>;
}

/** What useConsoleSuite gives a describe block; each part stands for what its beforeAll made. */
export interface ConsoleSuite {
  /** The server, with the console built for this run (test/setup/console.ts). */
  gh: TestServer;
  /** The organization (`org` of the options). */
  org: TestOrg;
  /** The login provider (with `idpPeople` only). */
  idp: TestIdp;
  /** The worker's Chromium (sharedBrowser): the block's contexts are its own, the browser not. */
  browser: Browser;
  /** The page and context of the last freshPage or signedInTab. */
  readonly page: Page;
  readonly context: BrowserContext;
  /**
   * A new browser context and page (a fresh sessionStorage): 20 s a step, confirm dialogs
   * accepted, anything but 127.0.0.1 refused (tests talk only to loopback). Closed after the
   * test, with a screenshot under test-results/ first if it failed.
   */
  freshPage(): Promise<Page>;
  /** On the current page (freshPage's), sign in to the console with `token`: its home page. */
  signIn(token: string): Promise<void>;
  /**
   * A tab signed in with `token`, made the current page: the first call for a token is
   * freshPage and signIn (the console's home page); a later one, in a later test, takes that
   * tab back as signIn left it, at an empty page of the server whose next load is a new
   * document: its sessionStorage as signIn left it (the session), no cookies, no permission
   * granted since. Kept for the block (a test that closes its context closes it: the next call
   * opens another). A new tab and a sign-in took about 1.5 s a test (load 8 on 2 cores).
   */
  signedInTab(token: string): Promise<Page>;
}

/**
 * The web console's test setup for a describe block (describeInBrowser): a server (with a
 * test identity provider as its login provider if asked), an organization, and the worker's
 * Chromium (sharedBrowser), made in a beforeAll; the server closed in an afterAll, with every
 * context the block opened; a fresh page a test, a screenshot of a failed test. Call it first
 * in the block: hooks the block adds after it see all of it made.
 */
export function useConsoleSuite(opts: ConsoleSuiteOptions = {}): ConsoleSuite {
  let gh: TestServer | undefined;
  let org: TestOrg | undefined;
  let idp: TestIdp | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let context: BrowserContext | undefined;
  const when = "useConsoleSuite(): its parts exist from the block's beforeAll to its afterAll";

  beforeAll(async () => {
    const port = await freePort();
    let login: Record<string, string> = {};
    if (opts.idpPeople) {
      idp = await startTestIdp({
        redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
        people: opts.idpPeople,
      });
      login = {
        GATEHOUSE_LOGIN_ISSUER: idp.issuer,
        GATEHOUSE_LOGIN_CLIENT_ID: idp.clientId,
        GATEHOUSE_LOGIN_CLIENT_SECRET: idp.clientSecret,
        GATEHOUSE_LOGIN_NAME: "Test IdP",
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
      };
    }
    gh = await startTestServer({ ...login, ...opts.env }, { ...opts.server, port });
    org = await gh.makeOrg(opts.org ?? "console-org");
    browser = await sharedBrowser();
  });
  afterAll(async () => {
    // The browser outlives the block: what the block opened in it goes with the block.
    await Promise.all([...contexts].map((c) => c.close().catch(() => undefined)));
    await gh?.close();
    await idp?.close();
  });
  const suite: ConsoleSuite = {
    gh: late(() => gh, when),
    org: late(() => org, when),
    idp: late(() => idp, `${when}, with idpPeople`),
    browser: late(() => browser, when),
    get page() {
      if (!page) throw new Error("useConsoleSuite(): no page yet; call freshPage() first");
      return page;
    },
    get context() {
      if (!context) throw new Error("useConsoleSuite(): no context yet; call freshPage() first");
      return context;
    },
    freshPage: () => open(false),
    async signIn(token) {
      const p = suite.page;
      await p.goto(`${suite.gh.url}/console/`);
      await p.getByLabel("Token", { exact: true }).fill(token);
      await p.getByRole("button", { name: "Sign in", exact: true }).click();
      await p.getByRole("heading", { name: "Your groups" }).waitFor();
    },
    async signedInTab(token) {
      const tab = tabs.get(token);
      if (!tab || tab.page.isClosed()) {
        const opened = await open(true);
        await suite.signIn(token);
        const storage = await opened.evaluate(() => JSON.stringify({ ...sessionStorage }));
        tabs.set(token, { context: suite.context, page: opened, storage });
        return opened;
      }
      context = tab.context;
      page = tab.page;
      onFailure(tab.page, () => rest(tab.page));
      await tab.context.clearCookies();
      await tab.context.clearPermissions();
      // A document of the server's origin that runs nothing, where its sessionStorage is set
      // back; the console's next load starts from that alone.
      await tab.page.goto(`${suite.gh.url}/healthz`);
      await tab.page.evaluate((kept) => {
        sessionStorage.clear();
        for (const [k, v] of Object.entries(JSON.parse(kept) as Record<string, string>)) {
          sessionStorage.setItem(k, v);
        }
      }, tab.storage);
      return tab.page;
    },
  };

  /** The contexts the block opened and has not closed yet. */
  const contexts = new Set<BrowserContext>();

  /** Tabs signIn left signed in, by token, with their sessionStorage as it left it. */
  const tabs = new Map<string, { context: BrowserContext; page: Page; storage: string }>();

  /** Once the test is over, after its afterEach hooks: a screenshot of `shown` if it failed. */
  function onFailure(shown: Page, then?: () => Promise<void>) {
    try {
      onTestFinished(async (ctx) => {
        if (ctx.task.result?.state === "fail" && page === shown) {
          const file = basename(ctx.task.file.name, ".test.ts");
          await screenshotOnFailure(shown, `${file} ${ctx.task.name}`);
        }
        await then?.();
      });
    } catch {
      // Not in a test.
    }
  }

  /** A kept tab between tests: the console unloaded, nothing of it running on. */
  const rest = (tab: Page) =>
    tab.goto("about:blank").then(
      () => undefined,
      () => undefined,
    );

  /** A new context and page (freshPage's), closed after the test unless `kept` for the block. */
  async function open(kept: boolean): Promise<Page> {
    if (!browser) throw new Error(when);
    const made = await browser.newContext();
    contexts.add(made);
    made.on("close", () => contexts.delete(made));
    context = made;
    made.setDefaultTimeout(20_000);
    const opened = await made.newPage();
    page = opened;
    // Once the test is over, after its afterEach hooks (even one that failed): a screenshot
    // of its last page if it failed, then its contexts closed, newest first (a kept one is put
    // to rest instead, and lasts until the block's end). Opened outside a test (a
    // beforeAll), a context lasts until the block's end.
    onFailure(opened, kept ? () => rest(opened) : () => made.close().catch(() => undefined));
    opened.on("dialog", (d) => void d.accept());
    await made.route(
      (url) => url.hostname !== "127.0.0.1",
      (route) => route.abort("blockedbyclient"),
    );
    await opts.onPage?.(opened, made);
    return opened;
  }
  return suite;
}
