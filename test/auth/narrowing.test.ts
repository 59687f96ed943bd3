import { describe, expect, it } from "vitest";
import { type AccessStore, createAuthorizer } from "../../src/auth/authorizer.js";
import type { Capability } from "../../src/auth/capabilities.js";
import type { Principal } from "../../src/auth/principal.js";
import { isAtOrBelow } from "../../src/uid.js";

// A property test of the authorizer's narrowing against a plain oracle: over random trees,
// bindings and narrowings, a narrowed principal holds at every uid exactly what its identity
// holds there, less what lies outside its capabilities and its group, and lists exactly within
// both. Never more than either, whatever the draw.

const caps = ["groups.list", "groups.create", "repo.list", "registry.push", "tag.delete"];

/** A seeded generator (mulberry32), so that a failure names the draw that found it. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function draw(seed: number) {
  const r = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const groups = ["o"];
  for (let i = 0; i < 12; i++) groups.push(`${pick(groups)}/g${i}`);
  const bindings = Array.from({ length: 1 + Math.floor(r() * 4) }, () => ({
    group: pick(groups),
    caps: caps.filter(() => r() < 0.5),
  }));
  const narrowCaps = r() < 0.7 ? new Set(caps.filter(() => r() < 0.5)) : undefined;
  const narrowGroup = r() < 0.7 ? pick(groups) : undefined;
  return { groups, bindings, narrowCaps, narrowGroup };
}

describe("a narrowed principal", () => {
  it.each(Array.from({ length: 200 }, (_, i) => i + 1))(
    "never holds more than its narrowing or its identity (draw %i)",
    async (seed) => {
      const { groups, bindings, narrowCaps, narrowGroup } = draw(seed);
      const store: AccessStore = {
        capabilitiesAt: async (_uid, prefixes) =>
          new Set(bindings.filter((b) => prefixes.includes(b.group)).flatMap((b) => b.caps)),
        groupsWithCapability: async (_uid, cap) =>
          bindings.filter((b) => b.caps.includes(cap)).map((b) => b.group),
      };
      const authz = createAuthorizer(store);
      const full: Principal = { identityUid: "p" };
      const narrowed: Principal = {
        identityUid: "p",
        narrowing: {
          ...(narrowCaps ? { capabilities: narrowCaps } : {}),
          ...(narrowGroup ? { group: narrowGroup } : {}),
        },
      };
      const inGroup = (uid: string) => narrowGroup === undefined || isAtOrBelow(uid, narrowGroup);
      for (const g of [...groups, "elsewhere"]) {
        const uid = `${g}/r`;
        const whole = await authz.capabilitiesAt(full, uid);
        const part = await authz.capabilitiesAt(narrowed, uid);
        const expected = [...whole].filter((c) => inGroup(uid) && (narrowCaps?.has(c) ?? true));
        expect([...part].sort()).toEqual(expected.sort());
      }
      for (const cap of caps as Capability[]) {
        const scope = await authz.listScope(narrowed, cap);
        // Everything listed is within the group, held through a binding, and of a cap allowed.
        for (const s of scope) {
          expect(inGroup(s)).toBe(true);
          expect(narrowCaps?.has(cap) ?? true).toBe(true);
          expect((await authz.capabilitiesAt(full, s)).has(cap)).toBe(true);
        }
        // And nothing it may use is left out.
        for (const g of groups) {
          if ((await authz.capabilitiesAt(narrowed, g)).has(cap)) {
            expect(scope.some((s) => isAtOrBelow(g, s))).toBe(true);
          }
        }
      }
    },
  );
});
