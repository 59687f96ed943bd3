import type { JWTPayload } from "jose";
import { RE2JS } from "re2js";
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

// Array claims are matched element by element; a huge array must not multiply the work.
const maxArrayElements = 100;

/**
 * Report whether a verified token's payload satisfies `cm`. Exact fields compare strings;
 * patterns (RE2 syntax, matched in time linear in the input: no backtracking) must match the
 * whole value. The audience defaults to `defaultAudience` (the base URL); an array `aud` or
 * array claim matches if any element does. Fails closed on anything malformed, including a
 * pattern that does not compile.
 */
export function matchClaims(
  cm: ClaimMatchRules,
  payload: JWTPayload,
  defaultAudience: string,
): boolean {
  const patterns: Array<{ re: RE2JS; values: string[] }> = [];
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
 * only issuers the identity names: its exact issuer, or one matching its issuerPattern on the
 * very scheme and host the pattern spells out literally (a pattern that pins no host, as
 * stored before this rule, matches nothing). A caller never picks the host fetched from.
 */
export function matchIssuer(
  cm: Pick<ClaimMatchRules, "issuer" | "issuerPattern">,
  iss: string,
): boolean {
  if (cm.issuer !== "") return iss === cm.issuer;
  const re = cm.issuerPattern === "" ? null : compile(cm.issuerPattern);
  const origin = pinnedOrigin(cm.issuerPattern);
  return (
    re !== null &&
    origin !== undefined &&
    iss.length <= claimMatchLimits.value &&
    originOf(iss) === origin &&
    re.matches(iss)
  );
}

/**
 * The origin (`https://host[:port]`) an issuer pattern fixes: its leading literal text (escaped
 * dots count; any other metacharacter ends it) must hold the scheme, the whole host and the
 * `/` after it, or be the whole pattern. Undefined when it does not pin one.
 */
export function pinnedOrigin(pattern: string): string | undefined {
  let literal = "";
  let i = 0;
  for (; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === undefined || !/[.\-/:]/.test(next)) break;
      literal += next;
      i++;
    } else if (/[A-Za-z0-9:/_~%-]/.test(c)) literal += c;
    else break;
  }
  const whole = i === pattern.length;
  const m = /^(https?:\/\/[^/]+)(\/|$)/.exec(literal);
  if (!m || (m[2] === "" && !whole)) return undefined;
  return originOf(m[1]!);
}

function originOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.username === "" && u.password === "" ? u.origin : undefined;
  } catch {
    return undefined;
  }
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
  const pinnable = cm.issuer === "" && cm.issuerPattern !== "" && compile(cm.issuerPattern);
  if (pinnable && !pinnedOrigin(cm.issuerPattern)) {
    add(
      "issuerPattern",
      "must begin with the issuer's scheme, host and '/' written literally (escape dots: https://ci\\.example\\.com/.*)",
    );
  }
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

const compiled = new Map<string, RE2JS | null>();

/** Compile `p` (RE2 syntax), or null if it is not a valid pattern. */
function compile(p: string): RE2JS | null {
  const hit = compiled.get(p);
  if (hit !== undefined) return hit;
  let re: RE2JS | null = null;
  if (p.length <= claimMatchLimits.pattern) {
    try {
      re = RE2JS.compile(p);
    } catch {
      re = null;
    }
  }
  if (compiled.size >= 1000) compiled.clear();
  compiled.set(p, re);
  return re;
}

/** Whether every check has a value its pattern matches as a whole. */
function runPatterns(checks: Array<{ re: RE2JS; values: string[] }>): boolean {
  return checks.every((c) => c.values.some((v) => c.re.matches(v)));
}
