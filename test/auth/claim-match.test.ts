import fc from "fast-check";
import type { JWTPayload } from "jose";
import { describe, expect, it } from "vitest";
import {
  type ClaimMatchRules,
  matchClaims,
  matchIssuer,
  validateClaimMatch,
} from "../../src/auth/claim-match.js";

const base = "https://api.test";
const rules = (over: Partial<ClaimMatchRules>): ClaimMatchRules => ({
  issuer: "",
  issuerPattern: "",
  subject: "",
  subjectPattern: "",
  audience: "",
  audiencePattern: "",
  claims: {},
  claimPatterns: {},
  ...over,
});
const gh = "https://token.actions.githubusercontent.com";
const token: JWTPayload = {
  iss: gh,
  sub: "repo:acme/app:ref:refs/heads/main",
  aud: base,
  ref: "refs/heads/main",
  run_number: 42,
  fork: false,
  groups: ["dev", "ops"],
  nested: { a: "b" },
};
const any = { issuerPattern: ".*", subjectPattern: ".*" };

describe("matchClaims", () => {
  it.each<[string, Partial<ClaimMatchRules>, JWTPayload, boolean]>([
    ["exact issuer and subject", { issuer: gh, subject: token.sub! }, token, true],
    ["wrong exact issuer", { issuer: "https://evil.test", subject: token.sub! }, token, false],
    ["exact is not a prefix", { issuer: gh, subject: "repo:acme/app" }, token, false],
    ["subject pattern", { issuer: gh, subjectPattern: "repo:acme/.*" }, token, true],
    [
      "pattern is anchored at the start",
      { issuer: gh, subjectPattern: "repo:acme/.*" },
      { ...token, sub: "xrepo:acme/a" },
      false,
    ],
    [
      "pattern is anchored at the end",
      { issuer: gh, subjectPattern: "repo:acme/app" },
      token,
      false,
    ],
    [
      "alternation stays inside the anchors",
      { issuer: gh, subjectPattern: "nothing|repo:acme/app" },
      { ...token, sub: "xx repo:acme/app" },
      false,
    ],
    [
      "issuer pattern",
      { issuerPattern: "https://token\\.actions\\..*", subject: token.sub! },
      token,
      true,
    ],
    ["no issuer rule fails closed", { subject: token.sub! }, token, false],
    ["no subject rule fails closed", { issuer: gh }, token, false],
    ["invalid pattern fails closed", { issuer: gh, subjectPattern: "(" }, token, false],
    ["default audience", any, token, true],
    ["default audience, other aud", any, { ...token, aud: "https://other.test" }, false],
    ["default audience in an array", any, { ...token, aud: ["x", base] }, true],
    ["no aud", any, (({ aud: _, ...rest }) => rest)(token), false],
    ["exact audience", { ...any, audience: "sts.test" }, { ...token, aud: "sts.test" }, true],
    ["exact audience replaces the default", { ...any, audience: "sts.test" }, token, false],
    [
      "audience pattern over an array",
      { ...any, audiencePattern: "sts\\..*" },
      { ...token, aud: ["a", "sts.x"] },
      true,
    ],
    [
      "audience pattern anchored",
      { ...any, audiencePattern: "sts" },
      { ...token, aud: "sts.x" },
      false,
    ],
    ["claims exact", { ...any, claims: { ref: "refs/heads/main" } }, token, true],
    ["claims exact mismatch", { ...any, claims: { ref: "refs/heads/dev" } }, token, false],
    ["claims number via String()", { ...any, claims: { run_number: "42" } }, token, true],
    ["claims boolean via String()", { ...any, claims: { fork: "false" } }, token, true],
    ["claims array: any element", { ...any, claims: { groups: "ops" } }, token, true],
    ["claims array: no element", { ...any, claims: { groups: "admin" } }, token, false],
    [
      "claims object never matches",
      { ...any, claims: { nested: "[object Object]" } },
      token,
      false,
    ],
    ["claims missing", { ...any, claims: { environment: "prod" } }, token, false],
    ["claims inherited property", { ...any, claims: { constructor: "" } }, token, false],
    [
      "claims all must hold",
      { ...any, claims: { ref: "refs/heads/main", fork: "true" } },
      token,
      false,
    ],
    [
      "claimPatterns",
      { ...any, claimPatterns: { ref: "refs/heads/(main|release-.*)" } },
      token,
      true,
    ],
    ["claimPatterns anchored", { ...any, claimPatterns: { ref: "main" } }, token, false],
    ["claimPatterns over an array", { ...any, claimPatterns: { groups: "o.s" } }, token, true],
    ["claimPatterns missing claim", { ...any, claimPatterns: { env: ".*" } }, token, false],
    ["claimPatterns empty pattern", { ...any, claimPatterns: { ref: "" } }, token, false],
  ])("%s", (_name, over, payload, want) => {
    expect(matchClaims(rules(over), payload, base)).toBe(want);
  });

  it("fails closed on a catastrophically backtracking pattern, quickly", () => {
    const cm = rules({ issuer: gh, subjectPattern: "(a|a)*" });
    // Time against a baseline of the same run, not the clock: a backtracking engine matches
    // 61 a's at once but tries 2^60 ways to fail on 60 a's and a b; a linear one takes alike.
    // Each is the fastest of 15 runs, the two taken in turn: a pause (a collection, another
    // process on a loaded machine) only ever adds time, so one that fell into a single run of
    // the failing value no longer makes it look 20 times slower. Both values are warmed first:
    // the engine builds its states for the `b` on first sight.
    const runOf = (sub: string, want: boolean) => {
      const start = performance.now();
      for (let i = 0; i < 20; i++) expect(matchClaims(cm, { ...token, sub }, base)).toBe(want);
      return performance.now() - start;
    };
    const matches = "a".repeat(61);
    const fails = `${"a".repeat(60)}b`;
    runOf(matches, true);
    runOf(fails, false);
    let matching = Number.POSITIVE_INFINITY;
    let failing = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 15; i++) {
      matching = Math.min(matching, runOf(matches, true));
      failing = Math.min(failing, runOf(fails, false));
    }
    expect(failing).toBeLessThan(20 * matching);
    // The same pattern still works on an easy value.
    expect(matchClaims(cm, { ...token, sub: "aaa" }, base)).toBe(true);
  });

  it("does not match over-long values against patterns", () => {
    const cm = rules({ issuer: gh, subjectPattern: "a*" });
    expect(matchClaims(cm, { ...token, sub: "a".repeat(2000) }, base)).toBe(false);
  });

  it("matches a literal pattern only against the whole value", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), fc.string(), (lit, pre, post) => {
        const escaped = lit.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
        const cm = rules({ issuer: gh, subjectPattern: escaped });
        const sub = pre + lit + post;
        return matchClaims(cm, { ...token, sub }, base) === (sub === lit);
      }),
    );
  });
});

describe("matchIssuer", () => {
  it.each<[Partial<ClaimMatchRules>, string, boolean]>([
    [{ issuer: gh }, gh, true],
    [{ issuer: gh }, `${gh}.evil.test`, false],
    [{ issuerPattern: "https://idp\\.acme\\.test/t/.*" }, "https://idp.acme.test/t/a", true],
    [{ issuerPattern: "https://idp\\.acme\\.test/t/.*" }, "https://idp.acme.test.evil/t/a", false],
    [{ issuerPattern: "https://idp\\.acme\\.test(/.*)?" }, "https://idp.acme.test", false],
    // A pattern that does not spell out its host pins none: nothing is ever fetched for it.
    [{ issuerPattern: "https://.*\\.acme\\.test" }, "https://idp.acme.test", false],
    [{ issuerPattern: "https://idp.acme.test/.*" }, "https://idp.acme.test/a", false],
    [{ issuerPattern: "https://idp\\.acme\\.test:8443/.*" }, "https://idp.acme.test:8443/a", true],
    [{}, gh, false],
  ])("%o and %s -> %s", (over, iss, want) => {
    expect(matchIssuer(rules(over), iss)).toBe(want);
  });
});

describe("validateClaimMatch", () => {
  const ok = { issuer: gh, subject: "s" };
  it.each<[string, Partial<ClaimMatchRules>, string[]]>([
    ["a valid exact match", ok, []],
    [
      "valid patterns",
      {
        issuerPattern: "https://ci\\.acme\\.test/.*",
        subjectPattern: "repo:.*",
        audiencePattern: "a|b",
      },
      [],
    ],
    [
      "an issuerPattern that pins no host",
      { issuerPattern: "https://.*\\.acme\\.test/", subject: "s" },
      ["claimMatch.issuerPattern"],
    ],
    [
      "an issuerPattern with unescaped dots in its host",
      { issuerPattern: "https://ci.acme.test/.*", subject: "s" },
      ["claimMatch.issuerPattern"],
    ],
    [
      "a pattern RE2 cannot run in linear time (a backreference)",
      { issuer: gh, subjectPattern: "(a)\\1" },
      ["claimMatch.subjectPattern"],
    ],
    ["missing issuer and subject", {}, ["claimMatch.issuer", "claimMatch.subject"]],
    ["issuer and issuerPattern", { ...ok, issuerPattern: ".*" }, ["claimMatch.issuer"]],
    ["subject and subjectPattern", { ...ok, subjectPattern: ".*" }, ["claimMatch.subject"]],
    [
      "audience and audiencePattern",
      { ...ok, audience: "a", audiencePattern: "a" },
      ["claimMatch.audience"],
    ],
    [
      "a pattern that does not compile",
      { issuer: gh, subjectPattern: "(" },
      ["claimMatch.subjectPattern"],
    ],
    [
      "a pattern that would escape its anchors",
      { issuer: gh, subjectPattern: "a)|(.*" },
      ["claimMatch.subjectPattern"],
    ],
    [
      "a pattern too long",
      { issuer: gh, subjectPattern: "a".repeat(257) },
      ["claimMatch.subjectPattern"],
    ],
    ["an exact value too long", { ...ok, audience: "a".repeat(1025) }, ["claimMatch.audience"]],
    [
      "a bad claim pattern",
      { ...ok, claimPatterns: { ref: "[" } },
      ["claimMatch.claimPatterns[ref]"],
    ],
    [
      "an empty claim pattern",
      { ...ok, claimPatterns: { ref: "" } },
      ["claimMatch.claimPatterns[ref]"],
    ],
    ["an empty claim name", { ...ok, claims: { "": "x" } }, ["claimMatch.claims"]],
    [
      "too many claims",
      { ...ok, claims: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`c${i}`, "v"])) },
      ["claimMatch.claims"],
    ],
  ])("%s", (_name, over, fields) => {
    expect(validateClaimMatch(rules(over)).map((v) => v.field)).toEqual(fields);
  });

  it("uses the given field prefix", () => {
    expect(validateClaimMatch(rules({}), "identity.claimMatch")[0]?.field).toBe(
      "identity.claimMatch.issuer",
    );
  });
});
