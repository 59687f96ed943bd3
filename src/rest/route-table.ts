import { decodeSegment, type PathTemplate } from "./path-template.js";

/** What the route table routes: an HTTP method and a parsed path template. */
export interface Routable {
  readonly httpMethod: string;
  readonly template: PathTemplate;
}

/** A route found for a request path, with the raw segments its template variables cover. */
export interface RouteMatch<R> {
  readonly route: R;
  /** The path's segments, not yet percent-decoded, without the verb. */
  readonly segments: readonly string[];
}

/**
 * RouteTable finds the route of a request path. It is a segment trie per HTTP method, built
 * once at start-up; matching walks it with no regular expressions. When several templates
 * match, the most specific wins: at each segment a literal beats `*`, which beats `**`; a
 * template that ends where the path ends beats a `**` that matches nothing; a template with
 * the path's custom verb beats one without.
 */
export interface RouteTable<R extends Routable> {
  /** The route for `httpMethod` and `path` (no query string), or undefined. */
  match(httpMethod: string, path: string): RouteMatch<R> | undefined;
  /** The HTTP methods that have a route for `path`, for 405 and OPTIONS answers. */
  allowedMethods(path: string): string[];
}

interface Node<R> {
  readonly literals: Map<string, Node<R>>;
  wildcard: Node<R> | undefined;
  /** Routes whose template ends at this node, by verb. */
  readonly ends: Map<string, R>;
  /** Routes whose template ends with `**` after this node, by verb. */
  readonly deep: Map<string, R>;
}

const newNode = <R>(): Node<R> => ({
  literals: new Map(),
  wildcard: undefined,
  ends: new Map(),
  deep: new Map(),
});

/**
 * Build the route table. Throws at start-up when two routes of one HTTP method have
 * templates of the same shape (they could never be told apart).
 */
export function createRouteTable<R extends Routable>(routes: readonly R[]): RouteTable<R> {
  const roots = new Map<string, Node<R>>();
  const verbs = new Map<string, Set<string>>();
  for (const route of routes) {
    let node: Node<R> | undefined = roots.get(route.httpMethod);
    if (!node) {
      node = newNode();
      roots.set(route.httpMethod, node);
    }
    const { segments, verb } = route.template;
    if (verb !== "") {
      const set = verbs.get(route.httpMethod) ?? new Set<string>();
      verbs.set(route.httpMethod, set.add(verb));
    }
    let slot = node.ends;
    for (const seg of segments) {
      if (seg.kind === "deep") {
        slot = node.deep;
        break;
      }
      // Literals are compared decoded, whichever way the template or the request spells them.
      const literal = seg.kind === "literal" ? (decodeSegment(seg.value, false) ?? seg.value) : "";
      let next: Node<R> | undefined =
        seg.kind === "literal" ? node.literals.get(literal) : node.wildcard;
      if (!next) {
        next = newNode();
        if (seg.kind === "literal") node.literals.set(literal, next);
        else node.wildcard = next;
      }
      node = next;
      slot = node.ends;
    }
    const taken = slot.get(verb);
    if (taken) {
      throw new Error(
        `conflicting REST routes: ${route.httpMethod} ${taken.template.source} and ${route.template.source}`,
      );
    }
    slot.set(verb, route);
  }

  const walk = (node: Node<R>, segs: readonly string[], i: number, verb: string): R | undefined => {
    if (i === segs.length) return node.ends.get(verb) ?? node.deep.get(verb);
    const raw = segs[i]!;
    const lit = node.literals.get(raw) ?? literalByDecoded(node, raw);
    const viaLiteral = lit && walk(lit, segs, i + 1, verb);
    if (viaLiteral) return viaLiteral;
    const viaWildcard = node.wildcard && walk(node.wildcard, segs, i + 1, verb);
    return viaWildcard || node.deep.get(verb);
  };

  const match = (httpMethod: string, path: string): RouteMatch<R> | undefined => {
    const root = roots.get(httpMethod);
    if (!root || path.charCodeAt(0) !== 47 /* "/" */) return undefined;
    const segments = path.slice(1).split("/");
    const last = segments[segments.length - 1]!;
    const colon = last.lastIndexOf(":");
    if (colon >= 0) {
      const verb = last.slice(colon + 1);
      if (verbs.get(httpMethod)?.has(verb)) {
        const trimmed = segments.slice(0, -1);
        trimmed.push(last.slice(0, colon));
        const route = walk(root, trimmed, 0, verb);
        if (route) return { route, segments: trimmed };
      }
    }
    const route = walk(root, segments, 0, "");
    return route && { route, segments };
  };

  return {
    match,
    allowedMethods(path) {
      return [...roots.keys()].filter((m) => match(m, path) !== undefined);
    },
  };
}

// Only a segment with an escape can differ from its decoded form.
function literalByDecoded<R>(node: Node<R>, raw: string): Node<R> | undefined {
  if (!raw.includes("%")) return undefined;
  const decoded = decodeSegment(raw, false);
  return decoded === undefined ? undefined : node.literals.get(decoded);
}
