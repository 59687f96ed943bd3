import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

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

/** Start headless Chromium with the flags this machine's closed network needs. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
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
    ],
  });
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);

/** Every accessibility violation of the page, whatever its impact, as axe-core finds them. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol: the page's CSP (no inline scripts) stays enforced.
  await page.evaluate(axeSource);
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
