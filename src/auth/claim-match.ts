import { createContext, Script } from "node:vm";
import type { JWTPayload } from "jose";
import type { FieldViolation } from "../errors.js";

/** The claimMatch of an identity (the generated ClaimMatch message fits); "" means unset. */
export interface ClaimMatchRules {
  issuer: string;
  issuerPattern: string;
  subject: string;
  subjectPattern: string;
  audience: string;
  audiencePattern: string;
  claims: { [name: string]: string };
  claimPatterns: { [name: string]: string };
}

/** Longest accepted pattern, exact value, claim name; most claims of each kind. */
export const claimMatchLimits = {
  pattern: 256,
  value: 1024,
  claimName: 256,
  claims: 32,
} as const;

// Time for all the patterns of one match together. A pattern that backtracks
// catastrophically is cut off (and fails the match) instead of stalling the event loop.
const patternBudgetMs = 25;
// Array claims are matched element by element; a huge array must not multiply the work.
const maxArrayElements = 100;

/**
 * Report whether a verified token's payload satisfies `cm`. Exact fields compare strings;
 * patterns must match the whole value. The audience defaults to `defaultAudience` (the base
 * URL); an array `aud` or array claim matches if any element does. Fails closed on anything
 * malformed, including a pattern that does not compile or runs out of time.
 */
export function matchClaims(
  cm: ClaimMatchRules,
  payload: JWTPayload,
  defaultAudience: string,
): boolean {
  const patterns: Array<{ re: RegExp; values: string[] }> = [];
  const want = (exact: string, pattern: string, values: string[], fallback?: string) => {
    if (exact !== "") return values.includes(exact);
    if (pattern !== "") {
      const re = compile(pattern);
      if (!re) return false;
      patterns.push({ re, values: values.filter((v) => v.length <= claimMatchLimits.value) });
      return true;
    }
    return fallback !== undefined && values.includes(fallback);
  };
  const ok =
    want(cm.issuer, cm.issuerPattern, valuesOf(payload.iss)) &&
    want(cm.subject, cm.subjectPattern, valuesOf(payload.sub)) &&
    want(cm.audience, cm.audiencePattern, valuesOf(payload.aud), defaultAudience) &&
    Object.entries(cm.claims).every(([name, v]) => claimOf(payload, name).includes(v)) &&
    Object.entries(cm.claimPatterns).every(([name, p]) => want("", p, claimOf(payload, name)));
  return ok && runPatterns(patterns);
}

/**
 * Report whether an unverified `iss` could satisfy `cm`, so that the STS exchange contacts
 * only issuers the identity names.
 */
export function matchIssuer(
  cm: Pick<ClaimMatchRules, "issuer" | "issuerPattern">,
  iss: string,
): boolean {
  if (cm.issuer !== "") return iss === cm.issuer;
  const re = cm.issuerPattern === "" ? null : compile(cm.issuerPattern);
  return (
    re !== null && iss.length <= claimMatchLimits.value && runPatterns([{ re, values: [iss] }])
  );
}

/**
 * Check a claimMatch given to the Identity API. Field names are `<field>.<camelCase name>`.
 */
export function validateClaimMatch(cm: ClaimMatchRules, field = "claimMatch"): FieldViolation[] {
  const out: FieldViolation[] = [];
  const add = (f: string, description: string) => out.push({ field: `${field}.${f}`, description });
  const exact = (f: string, v: string) => {
    if (v.length > claimMatchLimits.value) {
      add(f, `must be at most ${claimMatchLimits.value} characters`);
    }
  };
  const pattern = (f: string, p: string) => {
    if (p.length > claimMatchLimits.pattern) {
      add(f, `must be at most ${claimMatchLimits.pattern} characters`);
    } else if (p !== "" && !compile(p)) add(f, "is not a valid regular expression");
  };
  const pair = (name: string, v: string, p: string, required: boolean) => {
    if (v !== "" && p !== "") add(name, `set ${name} or ${name}Pattern, not both`);
    else if (required && v === "" && p === "")
      add(name, `one of ${name} and ${name}Pattern is required`);
    exact(name, v);
    pattern(`${name}Pattern`, p);
  };
  pair("issuer", cm.issuer, cm.issuerPattern, true);
  pair("subject", cm.subject, cm.subjectPattern, true);
  pair("audience", cm.audience, cm.audiencePattern, false);
  for (const [kind, map] of [
    ["claims", cm.claims],
    ["claimPatterns", cm.claimPatterns],
  ] as const) {
    const entries = Object.entries(map);
    if (entries.length > claimMatchLimits.claims) {
      add(kind, `at most ${claimMatchLimits.claims} entries`);
      continue;
    }
    for (const [name, v] of entries) {
      if (name === "" || name.length > claimMatchLimits.claimName) {
        add(kind, `claim names must be 1-${claimMatchLimits.claimName} characters`);
      } else if (kind === "claims") exact(`${kind}[${name}]`, v);
      else if (v === "") add(`${kind}[${name}]`, "is required");
      else pattern(`${kind}[${name}]`, v);
    }
  }
  return out;
}

function valuesOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (typeof v === "number" || typeof v === "boolean") return [String(v)];
  if (!Array.isArray(v)) return [];
  return v.slice(0, maxArrayElements).flatMap((e) => (Array.isArray(e) ? [] : valuesOf(e)));
}

function claimOf(payload: JWTPayload, name: string): string[] {
  // Own properties only: a claim named "constructor" must not find Object.prototype's.
  return Object.hasOwn(payload, name) ? valuesOf(payload[name]) : [];
}

const compiled = new Map<string, RegExp | null>();

/** Compile `p` anchored to the whole value, or null if it is not a valid pattern. */
function compile(p: string): RegExp | null {
  const hit = compiled.get(p);
  if (hit !== undefined) return hit;
  let re: RegExp | null = null;
  if (p.length <= claimMatchLimits.pattern) {
    try {
      // Compiled alone first, so that `a)|(.*` cannot break out of the anchoring group.
      new RegExp(p);
      re = new RegExp(`^(?:${p})$`);
    } catch {
      re = null;
    }
  }
  if (compiled.size >= 1000) compiled.clear();
  compiled.set(p, re);
  return re;
}

// node:vm's timeout interrupts a running regular expression; plain code cannot.
const sandbox = createContext(Object.create(null));
const allMatch = new Script("checks.every((c) => c.values.some((v) => c.re.test(v)))");

function runPatterns(checks: Array<{ re: RegExp; values: string[] }>): boolean {
  if (checks.length === 0) return true;
  sandbox.checks = checks;
  try {
    return allMatch.runInContext(sandbox, { timeout: patternBudgetMs }) === true;
  } catch {
    return false;
  } finally {
    sandbox.checks = undefined;
  }
}
