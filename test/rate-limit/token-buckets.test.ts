import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { addressKey } from "../../src/rate-limit/client-address.js";
import { createTokenBuckets } from "../../src/rate-limit/token-buckets.js";

// The token bucket and the settings that make its policies, on an injected clock.

const policy = { name: "api", count: 10, periodMs: 1_000, burst: 5 };

describe("token buckets", () => {
  it("let a burst through, refill at the rate and forget full buckets", () => {
    let t = 1_000_000;
    const buckets = createTokenBuckets(() => t);
    for (let i = 0; i < 5; i++) expect(buckets.take("a", policy)).toBe(0);
    // Empty: 10 a second is a token every 100 ms.
    expect(buckets.take("a", policy)).toBe(100);
    t += 99;
    expect(buckets.take("a", policy)).toBe(1);
    t += 1;
    expect(buckets.take("a", policy)).toBe(0);
    expect(buckets.take("b", policy)).toBe(0);
    expect(buckets.size).toBe(2);
    // A minute on, both have refilled: the next call's sweep drops them, then makes "c".
    t += 60_000;
    expect(buckets.take("c", policy)).toBe(0);
    expect(buckets.size).toBe(1);
  });

  it("never refill from a clock that went back", () => {
    let t = 1_000_000;
    const buckets = createTokenBuckets(() => t);
    for (let i = 0; i < 5; i++) buckets.take("a", policy);
    t -= 10_000;
    expect(buckets.take("a", policy)).toBeGreaterThan(0);
  });
});

describe("rate-limit settings", () => {
  const load = (env: Record<string, string>) => loadConfig([], env).rateLimits;

  it("are off by default", () => {
    expect(load({})).toMatchObject({ api: undefined, sts: undefined, login: undefined });
  });

  it("read a rate, a burst and organization overrides", () => {
    const s = load({
      GATEHOUSE_RATE_LIMIT: "600/1m",
      GATEHOUSE_RATE_LIMIT_BURST: "50",
      GATEHOUSE_RATE_LIMIT_ORGS: "ab12=20/s:5,cd34=off",
      GATEHOUSE_STS_RATE_LIMIT: "30/1h",
    });
    expect(s.api).toEqual({ name: "api", count: 600, periodMs: 60_000, burst: 50 });
    expect(s.organizations.get("ab12")).toEqual({
      name: "org:ab12",
      count: 20,
      periodMs: 1_000,
      burst: 5,
    });
    expect(s.organizations.get("cd34")).toBeNull();
    expect(s.sts).toEqual({ name: "sts", count: 30, periodMs: 3_600_000, burst: 30 });
  });

  it.each([
    [{ GATEHOUSE_RATE_LIMIT: "600" }, /GATEHOUSE_RATE_LIMIT \(--rate-limit\): "600" is not a rate/],
    [{ GATEHOUSE_RATE_LIMIT: "0/1m" }, /GATEHOUSE_RATE_LIMIT .* is not a rate/],
    [{ GATEHOUSE_RATE_LIMIT: "5/1m", GATEHOUSE_RATE_LIMIT_BURST: "0" }, /_BURST .* is not a burst/],
    [{ GATEHOUSE_RATE_LIMIT_ORGS: "Org=5/1m" }, /GATEHOUSE_RATE_LIMIT_ORGS .*"Org=5\/1m"/],
    [{ GATEHOUSE_RATE_LIMIT_ORGS: "ab=5/1m,ab=off" }, /named twice/],
  ])("refuse %o, naming the setting", (env, message) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(message);
  });
});

describe("client address keys", () => {
  it.each([
    ["127.0.0.1", "127.0.0.1"],
    ["::ffff:10.0.0.7", "10.0.0.7"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
  ])("%s is keyed as %s", (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});
