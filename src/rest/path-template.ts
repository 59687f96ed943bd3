/**
 * One segment of a path template: a literal, `*` (exactly one segment) or `**` (zero or more
 * segments; only ever the last segment of a template).
 */
export type TemplateSegment =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "wildcard" }
  | { readonly kind: "deep" };

/** A `{field.path=pattern}` variable: the request field set from the segments it covers. */
export interface TemplateVariable {
  /** Dotted proto field path, e.g. `group.uid`. */
  readonly fieldPath: string;
  /** Index of the first segment the variable covers. */
  readonly start: number;
  /** Index after the last segment it covers; -1 when it ends in `**` (the rest of the path). */
  readonly end: number;
}

/** PathTemplate is a parsed `google.api.http` path template (google/api/http.proto). */
export interface PathTemplate {
  /** The template as written. */
  readonly source: string;
  readonly segments: readonly TemplateSegment[];
  readonly variables: readonly TemplateVariable[];
  /** The custom verb after the last `:` (`redeem`), or "" when there is none. */
  readonly verb: string;
}

/** PathTemplateError is thrown at start-up for a template that does not follow the grammar. */
export class PathTemplateError extends Error {
  constructor(
    readonly template: string,
    reason: string,
  ) {
    super(`malformed path template ${JSON.stringify(template)}: ${reason}`);
    this.name = "PathTemplateError";
  }
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Characters that end a literal; the rest of RFC 3986 pchar is allowed in literals.
const literalStop = new Set(["/", "{", "}", ":", "*", "="]);
const literalChar = /^[A-Za-z0-9\-._~!$&'()+,;@%]$/;

/**
 * Parse a path template following the grammar of google/api/http.proto:
 * `"/" Segments [":" Verb]`, where a segment is `*`, `**`, a literal or
 * `{field.path}` / `{field.path=Segments}`. `**` may only be the last segment. Throws
 * PathTemplateError for anything else, so a bad annotation fails at start-up.
 */
export function parsePathTemplate(source: string): PathTemplate {
  const fail = (reason: string): never => {
    throw new PathTemplateError(source, reason);
  };
  const segments: TemplateSegment[] = [];
  const variables: TemplateVariable[] = [];
  let i = 0;
  let verb = "";

  const readLiteral = (): string => {
    const start = i;
    while (i < source.length && !literalStop.has(source[i]!)) {
      if (!literalChar.test(source[i]!)) fail(`invalid character ${JSON.stringify(source[i])}`);
      i++;
    }
    if (i === start) fail(`empty segment at offset ${start}`);
    return source.slice(start, i);
  };

  // One `*`, `**` or literal; variables are handled by the caller.
  const readPlainSegment = (): TemplateSegment => {
    if (source.startsWith("**", i)) {
      i += 2;
      return { kind: "deep" };
    }
    if (source[i] === "*") {
      i++;
      return { kind: "wildcard" };
    }
    return { kind: "literal", value: readLiteral() };
  };

  const readVariable = (): void => {
    i++; // "{"
    const close = source.indexOf("}", i);
    if (close < 0) fail("unclosed `{`");
    const eq = source.indexOf("=", i);
    const pathEnd = eq >= 0 && eq < close ? eq : close;
    const fieldPath = source.slice(i, pathEnd);
    if (!fieldPath.split(".").every((part) => identifier.test(part))) {
      fail(`bad field path ${JSON.stringify(fieldPath)}`);
    }
    i = pathEnd;
    const start = segments.length;
    if (source[i] === "=") {
      i++;
      for (;;) {
        if (source[i] === "{") fail("nested variable");
        segments.push(readPlainSegment());
        if (source[i] === "/") i++;
        else break;
      }
    } else {
      segments.push({ kind: "wildcard" });
    }
    if (source[i] !== "}") fail(`expected \`}\` at offset ${i}`);
    i++;
    const deep = segments[segments.length - 1]?.kind === "deep";
    variables.push({ fieldPath, start, end: deep ? -1 : segments.length });
  };

  if (source[0] !== "/") fail("must start with `/`");
  i = 1;
  for (;;) {
    if (source[i] === "{") readVariable();
    else if (source[i] === "}") fail("unbalanced `}`");
    else segments.push(readPlainSegment());
    if (i === source.length) break;
    if (source[i] === "/") {
      i++;
      continue;
    }
    if (source[i] === ":") {
      i++;
      verb = readLiteral();
      if (i !== source.length) fail("the verb must end the template");
      break;
    }
    fail(`unexpected ${JSON.stringify(source[i])} at offset ${i}`);
  }

  segments.forEach((s, k) => {
    if (s.kind === "deep" && k !== segments.length - 1) fail("`**` must be the last segment");
  });
  const paths = variables.map((v) => v.fieldPath);
  for (const a of paths) {
    for (const b of paths) {
      if (a !== b && b.startsWith(`${a}.`)) fail(`variables ${a} and ${b} overlap`);
    }
    if (paths.indexOf(a) !== paths.lastIndexOf(a)) fail(`variable ${a} appears twice`);
  }
  return { source, segments, variables, verb };
}

/**
 * Percent-decode one path segment. A segment inside a multi-segment (`**`) variable keeps
 * `%2F` encoded, as http.proto asks, so that a decoded value never gains a slash that was
 * not a separator. Returns undefined for a malformed escape.
 */
export function decodeSegment(segment: string, keepSlash: boolean): string | undefined {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(keepSlash ? segment.replace(/%2f/gi, "%252F") : segment);
  } catch {
    return undefined;
  }
}

/**
 * The decoded value of each variable of `template` for the path segments it matched (in
 * `template.variables` order). A variable over several segments joins them with `/`, so uids
 * keep their slashes. An entry is undefined when a segment's percent-encoding is malformed.
 */
export function variableValues(
  template: PathTemplate,
  segments: readonly string[],
): (string | undefined)[] {
  return template.variables.map((v) => {
    const end = v.end < 0 ? segments.length : v.end;
    if (v.end - v.start === 1) return decodeSegment(segments[v.start]!, false);
    const parts: string[] = [];
    for (let k = v.start; k < end; k++) {
      const part = decodeSegment(segments[k]!, true);
      if (part === undefined) return undefined;
      parts.push(part);
    }
    return parts.join("/");
  });
}
