import { describe, expect, it } from "vitest";
import { retryDelayMs } from "../../src/webhooks/deliverer.js";
import { sign, verify } from "../../src/webhooks/signature.js";
import {
  isAllowedSinkAddress,
  RefusedSinkAddressError,
  type SinkRules,
  sinkLookup,
  sinkProblem,
} from "../../src/webhooks/sink-rules.js";

const strict: SinkRules = { allowLoopback: false, allowPrivateAddresses: false };
const dev: SinkRules = { allowLoopback: true, allowPrivateAddresses: false };
const inside: SinkRules = { allowLoopback: false, allowPrivateAddresses: true };
const open: SinkRules = { allowLoopback: true, allowPrivateAddresses: true };

describe("webhook sink rules", () => {
  it.each([
    ["https://hooks.example.com/x", strict, undefined],
    ["https://93.184.216.34/x", strict, undefined],
    ["http://hooks.example.com/x", strict, "must be an https URL"],
    ["http://hooks.example.com/x", dev, "must be an https URL"],
    ["http://127.0.0.1:8080/x", strict, "loopback"],
    ["http://127.0.0.1:8080/x", dev, undefined],
    ["https://localhost/x", strict, "loopback"],
    ["https://localhost./x", strict, "loopback"],
    ["http://a.localhost/x", dev, undefined],
    ["http://[::1]:9/x", dev, undefined],
    ["http://[::ffff:127.0.0.1]:9/x", strict, "loopback"],
    ["https://10.0.0.1/x", strict, "private"],
    ["https://10.0.0.1/x", inside, undefined],
    ["http://10.0.0.1/x", inside, "must be an https URL"],
    ["https://169.254.169.254/latest", strict, "private"],
    ["https://[fe80::1]/x", strict, "private"],
    ["https://[::ffff:a9fe:a9fe]/x", strict, "private"],
    ["https://100.64.0.1/x", strict, "private"],
    ["https://u:p@hooks.example.com/x", strict, "credentials"],
    ["https://hooks.example.com/x#frag", strict, "fragment"],
    ["file:///etc/passwd", dev, "https URL"],
    ["hooks.example.com", strict, "https URL"],
    [`https://hooks.example.com/${"a".repeat(2100)}`, strict, "at most 2048"],
    // The unspecified addresses reach the server itself: refused whatever the settings say.
    ["https://0.0.0.0:8443/x", inside, "unspecified"],
    ["https://0.0.0.0:8443/x", open, "unspecified"],
    ["http://0.0.0.0:8080/x", open, "unspecified"],
    ["https://0/x", open, "unspecified"],
    ["https://0x0:22/x", open, "unspecified"],
    ["https://0.1.2.3/x", open, "unspecified"],
    ["https://[::]/x", open, "unspecified"],
    ["https://[0:0::0]:8443/x", open, "unspecified"],
    ["https://[::ffff:0.0.0.0]/x", open, "unspecified"],
  ] as const)("%s", (sink, rules, problem) => {
    const got = sinkProblem(sink, rules);
    if (problem === undefined) expect(got).toBeUndefined();
    else expect(got).toContain(problem);
  });

  it("checks each address a name resolves to, at delivery (DNS rebinding)", async () => {
    const resolve = (rules: SinkRules, host: string) =>
      new Promise<string>((ok, fail) =>
        sinkLookup(rules)(host, {}, (err, address) => (err ? fail(err) : ok(String(address)))),
      );
    // localhost is a name: what it resolves to (127.0.0.1, ::1) is what gets refused.
    await expect(resolve(strict, "localhost")).rejects.toBeInstanceOf(RefusedSinkAddressError);
    expect(["127.0.0.1", "::1"]).toContain(await resolve(dev, "localhost"));
    expect(isAllowedSinkAddress("127.0.0.1", inside)).toBe(false);
    expect(isAllowedSinkAddress("192.168.1.1", inside)).toBe(true);
    expect(isAllowedSinkAddress("192.168.1.1", dev)).toBe(false);
    expect(isAllowedSinkAddress("8.8.8.8", strict)).toBe(true);
    // A name resolving to an unspecified address is refused under any settings.
    for (const address of ["0.0.0.0", "0.255.1.1", "::", "::ffff:0.0.0.0"]) {
      expect(isAllowedSinkAddress(address, open), address).toBe(false);
    }
  });

  it("backs off exponentially, with jitter, up to the cap", () => {
    const s = { retryBaseMs: 1000, retryMaxMs: 10_000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, s, () => 1))).toEqual([
      1000, 2000, 4000, 8000, 10_000,
    ]);
    expect(retryDelayMs(3, s, () => 0)).toBe(2000);
    const jittered = retryDelayMs(3, s, Math.random);
    expect(jittered).toBeGreaterThanOrEqual(2000);
    expect(jittered).toBeLessThanOrEqual(4000);
  });

  it("signs as docs/events.md says, and verification refuses a changed body or old time", () => {
    const now = 1_800_000_000;
    const header = sign("whsec_k", '{"a":1}', now);
    expect(verify("whsec_k", '{"a":1}', header, now)).toBe(true);
    expect(verify("whsec_k", '{"a":2}', header, now)).toBe(false);
    expect(verify("whsec_x", '{"a":1}', header, now)).toBe(false);
    expect(verify("whsec_k", '{"a":1}', header, now + 301)).toBe(false);
  });
});
