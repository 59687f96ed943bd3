import { invalidArgument, invalidField } from "../errors.js";
import type { Cursor, ListPage, ListQuery, SortField } from "../store/vocabulary.js";
import { isUid } from "../uid.js";
import { createPageTokens, type PageTokenContent } from "./page-tokens.js";
import { commonSorts, type SortFields } from "./sort-fields.js";

/** Results per page when the request says 0 or nothing. */
export const defaultPageSize = 50;
/** The most results one page holds; larger requests are cut to it. */
export const maxPageSize = 200;
/** How long a page token stays good; an older one restarts from the first page. */
export const pageTokenLifetimeMs = 3 * 24 * 3_600_000;
/** The most uids one `uidp.ids` filter may name. */
export const maxUidpIds = 1000;

/** The list parameters every List request has (the generated request types match it). */
export interface ListParams {
  uidp?:
    | {
        descendantsOf: string;
        childrenOf: string;
        /** Absent in the v1 adapters' and internal callers' requests. */
        ancestorsOf?: string;
        inRoot?: boolean;
        ids?: readonly string[];
      }
    | undefined;
  name: string;
  pageSize: number;
  pageToken: string;
  orderBy: string;
  skip: number;
}

/** A value of a resource-specific filter; part of what a page token is bound to. */
export type FilterValue = string | number | boolean | readonly string[] | undefined;

/** Resource filters: any object whose values are FilterValues (interfaces too). */
export type ListFilters<F> = { [K in keyof F]: FilterValue };

/** Options of parse. */
export interface ParseOptions {
  /**
   * Who is asking (e.g. the principal's uid, or its organization): tokens are bound to it, so
   * one caller's token is refused for another.
   */
  caller?: string;
  /** The subtrees the caller may list (see ListQuery.scope); not part of the token binding. */
  scope?: readonly string[];
  /** The fields `order_by` may name (sortFieldsOf the resource); by default the common ones. */
  sort?: SortFields;
}

/** A ListQuery from parse, with what finish needs to mint the next page's token. */
export interface PreparedList<F = Record<string, never>> extends ListQuery<F> {
  /** The keyed fingerprint of the filters and caller. */
  readonly fingerprint: string;
}

/**
 * A finished page, ready for the response message: spread everything but `items` into it, as
 * `{ things: items.map(toThing), ...envelope }`.
 */
export interface ListResult<T> {
  items: T[];
  /** Every match across all pages. */
  totalCount: bigint;
  /** Echoes the request's skip. */
  skipped: number;
  /** Present only when more results follow. */
  nextPageToken?: string;
}

/** ListEngine turns List requests into store queries and store pages into responses. */
export interface ListEngine {
  /**
   * Validate and decode the list parameters of `req` plus the resource's own `filters`; all
   * filters that are present must hold (AND).
   * Throws INVALID_ARGUMENT (BadRequest on page_size, skip, order_by, uidp.descendants_of,
   * uidp.children_of, uidp.ancestors_of, uidp.ids or page_token) for a bad value, and for a page token that is altered,
   * foreign, or issued for other filters, another caller or another order. An expired token
   * silently restarts from the first page.
   */
  parse<F extends ListFilters<F>>(
    req: ListParams,
    filters: F,
    opts?: ParseOptions,
  ): PreparedList<F>;
  /**
   * Shape the store's page: the total as int64, skip echoed, and a signed token after the last
   * item when the store says more follow. `sortValueOf` gives an item's value for a sort field.
   */
  finish<T extends { uid: string }>(
    query: PreparedList<unknown>,
    page: ListPage<T>,
    sortValueOf: (item: T, field: SortField) => string | number,
  ): ListResult<T>;
}

/** Options of createListEngine. */
export interface ListEngineOptions {
  /** The page-token signing key (shared by every process on one database). */
  key: Buffer;
  now: () => number;
}

const orderByHelp = (sort: SortFields) =>
  `must be "<field>" or "<field> desc", field one of ${sort.names.join(", ")}`;

/** Create the list engine shared by every List RPC. */
export function createListEngine(opts: ListEngineOptions): ListEngine {
  const tokens = createPageTokens(opts.key);
  const { now } = opts;

  return {
    parse(req, filters, parseOpts = {}) {
      const base = parseParams(req, parseOpts.sort ?? commonSorts);
      const fingerprint = tokens.fingerprint(fingerprintMaterial(base, filters, parseOpts.caller));
      const after = req.pageToken === "" ? undefined : cursorOf(req.pageToken, base, fingerprint);
      return {
        ...base,
        filters,
        fingerprint,
        ...(after ? { after } : {}),
        ...(parseOpts.scope ? { scope: parseOpts.scope } : {}),
      };
    },

    finish(query, page, sortValueOf) {
      const last = page.items.at(-1);
      const next =
        page.hasMore && last
          ? tokens.seal({
              order: query.order,
              after: { value: sortValueOf(last, query.order.field), uid: last.uid },
              fingerprint: query.fingerprint,
              issuedAt: now(),
            })
          : undefined;
      return {
        items: page.items,
        totalCount: BigInt(page.total),
        skipped: query.skip,
        ...(next ? { nextPageToken: next } : {}),
      };
    },
  };

  /** The cursor of a token, or undefined for an expired one (a fresh start). */
  function cursorOf(
    token: string,
    q: Pick<ListQuery, "order">,
    fingerprint: string,
  ): Cursor | undefined {
    const content = tokens.open(token);
    if (!content) throw invalidField("page_token", "is not a valid page token");
    if (now() - content.issuedAt > pageTokenLifetimeMs) return undefined;
    checkBinding(content, q, fingerprint);
    return content.after;
  }
}

type BaseQuery = Omit<ListQuery, "filters" | "after" | "scope">;

/** Validate the common parameters, reporting every bad field at once. */
function parseParams(req: ListParams, sort: SortFields): BaseQuery {
  const problems: { field: string; description: string }[] = [];
  const bad = (field: string, description: string) => problems.push({ field, description });
  if (req.pageSize < 0) bad("page_size", "must not be negative");
  if (req.skip < 0) bad("skip", "must not be negative");
  const order = parseOrderBy(req.orderBy, sort);
  if (!order) bad("order_by", orderByHelp(sort));
  const descendantsOf = req.uidp?.descendantsOf ?? "";
  const childrenOf = req.uidp?.childrenOf ?? "";
  if (descendantsOf !== "" && !isUid(descendantsOf)) {
    bad("uidp.descendants_of", "is not a valid uid");
  }
  if (childrenOf !== "" && !isUid(childrenOf)) bad("uidp.children_of", "is not a valid uid");
  const ancestorsOf = req.uidp?.ancestorsOf ?? "";
  if (ancestorsOf !== "" && !isUid(ancestorsOf)) bad("uidp.ancestors_of", "is not a valid uid");
  const ids = req.uidp?.ids ?? [];
  if (ids.length > maxUidpIds) bad("uidp.ids", `may name at most ${maxUidpIds} uids`);
  else if (ids.some((id) => !isUid(id))) bad("uidp.ids", "must all be valid uids");
  // No name holds one (names are printable), and PostgreSQL cannot even compare with one.
  if (req.name.includes("\u0000")) bad("name", "may not contain the NUL character");
  if (problems.length > 0 || !order) throw invalidArgument(problems);
  return {
    ...(descendantsOf !== "" ? { descendantsOf } : {}),
    ...(childrenOf !== "" ? { childrenOf } : {}),
    ...(ancestorsOf !== "" ? { ancestorsOf } : {}),
    ...(req.uidp?.inRoot ? { inRoot: true } : {}),
    // Sorted and without repeats: the same set is the same filter, for page tokens too.
    ...(ids.length > 0 ? { ids: [...new Set(ids)].sort() } : {}),
    ...(req.name !== "" ? { name: req.name } : {}),
    order,
    skip: req.skip,
    limit: req.pageSize === 0 ? defaultPageSize : Math.min(req.pageSize, maxPageSize),
  };
}

/**
 * Parse `order_by`: `<field>` or `<field> asc|desc` (direction case-insensitive, any spaces);
 * empty means create_time ascending; `<field>` one of `sort`'s. Undefined if it is anything else.
 */
export function parseOrderBy(
  orderBy: string,
  sort: SortFields = commonSorts,
): ListQuery["order"] | undefined {
  const [name, dir, ...rest] = orderBy.trim().split(/\s+/);
  if (name === undefined || name === "") return { field: "create_time", desc: false };
  const field = sort.byName.get(name);
  const direction = dir?.toLowerCase() ?? "asc";
  if (!field || rest.length > 0 || (direction !== "asc" && direction !== "desc")) return undefined;
  return { field, desc: direction === "desc" };
}

/** Canonical text of what a token is bound to: tree filters, name, resource filters, caller. */
function fingerprintMaterial(q: BaseQuery, filters: object, caller: string | undefined): string {
  const resource = Object.entries(filters)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // The later uidp filters come last, and only when given: a token minted before they
  // existed (or without them) keeps its fingerprint, so a rolling upgrade breaks no paging.
  const later =
    q.ancestorsOf !== undefined || q.inRoot || q.ids !== undefined
      ? [[q.ancestorsOf ?? null, q.inRoot ?? false, q.ids ?? null]]
      : [];
  return JSON.stringify([
    q.descendantsOf ?? null,
    q.childrenOf ?? null,
    q.name ?? null,
    resource,
    caller ?? null,
    ...later,
  ]);
}

function checkBinding(
  content: PageTokenContent,
  q: Pick<ListQuery, "order">,
  fingerprint: string,
): void {
  if (content.order.field !== q.order.field || content.order.desc !== q.order.desc) {
    throw invalidField("page_token", "was issued for another order_by");
  }
  if (content.fingerprint !== fingerprint) {
    throw invalidField("page_token", "was issued for other filters");
  }
}
