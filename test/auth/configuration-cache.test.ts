import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  configurationTtlMs,
  createUpstream,
  type LoginProvider,
} from "../../src/auth/login/upstream.js";
import { maxUpstreamBodyBytes } from "../../src/auth/login/upstream-fetch.js";

// What the red team did: many providers, each with a discovery document under the body cap
// that parses to megabytes (an array of a hundred thousand numbers), each discovered by a
// sign-in. The kept configurations stay within a byte budget, the least recently used are
// discovered again, and an expired one is dropped and discovered again (an injected clock).

let base: string;
/** Discovery requests per issuer number. */
const discovered = new Map<number, number>();
const server = createServer((req, res) => {
  const m = /^\/i\/(\d+)\/\.well-known\/openid-configuration$/.exec(req.url ?? "");
  if (!m) return res.writeHead(404).end();
  const n = Number(m[1]);
  discovered.set(n, (discovered.get(n) ?? 0) + 1);
  const issuer = `${base}/i/${n}`;
  const doc = JSON.stringify({
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ["code"],
    // Just under the cap on the wire: 2 bytes a number, some 32 bytes each once parsed.
    x_padding: new Array(Math.floor((maxUpstreamBodyBytes - 400) / 2)).fill(1),
  });
  res.writeHead(200, { "content-type": "application/json" }).end(doc);
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const provider = (n: number): LoginProvider => ({
  id: `${"a".repeat(40)}/${String(n).padStart(16, "0")}`,
  issuer: `${base}/i/${n}`,
  clientId: "c",
  clientSecret: "",
  scopes: [],
});

const budget = 8 * 1024 * 1024;

function upstream(now: () => number) {
  return createUpstream({
    authUrl: "http://127.0.0.1:1",
    allowInsecureLoopback: true,
    allowPrivateAddresses: true,
    configurationBudgetBytes: budget,
    now,
  });
}

it("keeps the configurations within the byte budget, the least recently used out first", async () => {
  discovered.clear();
  const up = upstream(() => 1_000);
  for (let n = 0; n < 12; n++) {
    await up.start(provider(n));
    expect(up.heldBytes(), `after ${n + 1}`).toBeLessThanOrEqual(budget);
  }
  // Each counts for what it holds parsed: a few fit, not twelve.
  expect(up.heldBytes()).toBeGreaterThan(budget / 2);
  // The most recent is kept; the first was forgotten and is discovered again.
  await up.start(provider(11));
  expect(discovered.get(11)).toBe(1);
  await up.start(provider(0));
  expect(discovered.get(0)).toBe(2);
  expect(up.heldBytes()).toBeLessThanOrEqual(budget);
});

it("drops an expired configuration, asked for or not, and discovers it again", async () => {
  discovered.clear();
  let t = 1_000;
  const up = upstream(() => t);
  await up.start(provider(100));
  await up.start(provider(100));
  expect(discovered.get(100)).toBe(1);
  const held = up.heldBytes();
  expect(held).toBeGreaterThan(0);
  t += configurationTtlMs - 1;
  expect(up.heldBytes()).toBe(held);
  t += 1;
  // Nothing is held past its time, though nobody asked for it again.
  expect(up.heldBytes()).toBe(0);
  await up.start(provider(100));
  expect(discovered.get(100)).toBe(2);
});
