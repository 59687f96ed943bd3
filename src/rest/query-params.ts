import type { DescMessage, Message } from "@bufbuild/protobuf";
import { invalidField } from "../errors.js";
import { isTextSettable, resolveFieldPath, setFromText } from "./field-path.js";
import type { BodyRule } from "./http-rules.js";

/** What decides which fields a query may set. */
export interface QueryRules {
  /** The request message. */
  readonly schema: DescMessage;
  /** Proto paths set by the URL path (`uid`, `group.uid`). */
  readonly pathBound: readonly string[];
  readonly body: BodyRule;
  /** Skip unknown parameters instead of refusing them (v1's gateway ignored them). */
  readonly ignoreUnknown?: boolean;
}

/**
 * Set fields of `target` from a query string (without `?`): each parameter names a field by
 * its dotted path, every part in snake_case or camelCase (`page_size`, `uidp.descendantsOf`).
 * A repeated field takes each repetition; other fields may be given once. Throws
 * INVALID_ARGUMENT for an unknown parameter (unless `ignoreUnknown`), a message-typed field, a field set by the path or
 * bound to the body, or a value of the wrong type. With body `*` a parameter may set a field
 * the body left out (`bodyKeys`: the proto names of the body's top-level keys).
 */
export function applyQuery(
  rules: QueryRules,
  target: Message,
  query: string,
  bodyKeys: ReadonlySet<string> | undefined,
): void {
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(query)) {
    const path = resolveFieldPath(rules.schema, name);
    if (!path) {
      if (rules.ignoreUnknown) continue;
      throw invalidField(name, "unknown query parameter");
    }
    const leaf = path.fields[path.fields.length - 1]!;
    if (!isTextSettable(leaf, true)) {
      throw invalidField(path.name, "a message field cannot be set from the query; set its fields");
    }
    if (rules.pathBound.some((bound) => overlaps(bound, path.name))) {
      throw invalidField(path.name, "set by the URL path; it cannot be a query parameter");
    }
    const top = path.fields[0]!.name;
    if (rules.body.kind === "field" && rules.body.field.name === top) {
      throw invalidField(path.name, "bound to the request body; it cannot be a query parameter");
    }
    if (rules.body.kind === "all" && bodyKeys?.has(top)) {
      throw invalidField(path.name, "set by both the request body and the query");
    }
    if (leaf.fieldKind !== "list") {
      if (seen.has(path.name)) throw invalidField(path.name, "given more than once");
      seen.add(path.name);
    }
    setFromText(rules.schema, target, path, value);
  }
}

// `a.b` and `a` overlap; `a.b` and `a.bc` do not.
function overlaps(a: string, b: string): boolean {
  if (a === b) return true;
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  return long.startsWith(short) && long[short.length] === ".";
}
