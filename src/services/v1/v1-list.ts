import { Code, ConnectError } from "@connectrpc/connect";
import type { UidpFilter } from "../../../gen/gatehouse/common/v1/uidp_pb.js";
import { failedPrecondition } from "../../errors.js";
import { isAtOrBelow, parentOf } from "../../uid.js";

/**
 * The most items one v1 List answers (docs/v1-migration.md). v1 Lists have no pages, so the
 * adapter walks the v2 pages; past this many matching items it answers FAILED_PRECONDITION
 * instead of a partial list, which a v1 client would take for the whole (and treat what is
 * missing as deleted).
 */
export const v1ListCap = 10_000;

/** The v2 page size the adapter asks for: v2's maximum. */
const v2PageSize = 200;

/** One v2 page, reduced to what walking needs. */
export interface V2Page<T> {
  readonly items: readonly T[];
  readonly nextPageToken?: string | undefined;
}

/**
 * Every item of a v2 List, page after page (`fetch` gets the page size and token), keeping
 * those `keep` accepts; FAILED_PRECONDITION once more than v1ListCap are kept.
 */
export async function collectPages<T>(
  what: string,
  fetch: (pageSize: number, pageToken: string) => Promise<V2Page<T>>,
  keep: (item: T) => boolean = () => true,
): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  for (;;) {
    const page = await fetch(v2PageSize, token);
    for (const item of page.items) {
      if (!keep(item)) continue;
      if (out.length === v1ListCap) throw tooMany(what);
      out.push(item);
    }
    if (!page.nextPageToken) return out;
    token = page.nextPageToken;
  }
}

/**
 * The answer of a v1 List by id: the v2 Get's result, or nothing when it is NOT_FOUND or
 * PERMISSION_DENIED (v1 answers an empty list for both: nothing to see is nothing to see).
 */
export async function getOrNothing<T>(get: () => Promise<T>): Promise<T[]> {
  try {
    return [await get()];
  } catch (err) {
    const code = err instanceof ConnectError ? err.code : undefined;
    if (code === Code.NotFound || code === Code.PermissionDenied) return [];
    throw err;
  }
}

/** The v2 UidpFilter fields a v1 filter maps to directly. */
export function v2Uidp(uidp: UidpFilter | undefined): {
  descendantsOf: string;
  childrenOf: string;
} {
  return { descendantsOf: uidp?.descendantsOf ?? "", childrenOf: uidp?.childrenOf ?? "" };
}

/**
 * Whether `uid` passes a v1 UidpFilter. The v2 List already applied `descendants_of` and
 * `children_of` (checked again here for a List by id); `ancestors_of`, `in_root` and `ids`
 * have no v2 counterpart. All of them only narrow what v2 allowed.
 */
export function uidpKeeps(uidp: UidpFilter | undefined, uid: string): boolean {
  if (!uidp) return true;
  const { descendantsOf, childrenOf } = uidp;
  if (descendantsOf !== "" && (uid === descendantsOf || !isAtOrBelow(uid, descendantsOf))) {
    return false;
  }
  if (childrenOf !== "" && parentOf(uid) !== childrenOf) return false;
  if (uidp.inRoot && parentOf(uid) !== "") return false;
  if (uidp.ids.length > 0 && !uidp.ids.includes(uid)) return false;
  if (
    uidp.ancestorsOf !== "" &&
    (uid === uidp.ancestorsOf || !isAtOrBelow(uidp.ancestorsOf, uid))
  ) {
    return false;
  }
  return true;
}

function tooMany(what: string): ConnectError {
  return failedPrecondition(
    `more than ${v1ListCap} ${what} match this v1 List, which has no pages; ` +
      "narrow it with uidp or name filters, or use the v2beta1 List, which pages",
  );
}

/** How one v1 List reaches v2: by id (a v2 Get) or by pages (a v2 List). */
export interface ListSource<T> {
  /** The resources' plural, for the cap's message. */
  readonly what: string;
  /** The exact id asked for, or "" for none. */
  readonly id: string;
  readonly get: (id: string) => Promise<T>;
  readonly page: (pageSize: number, pageToken: string) => Promise<V2Page<T>>;
  /** The filters v2 did not apply (applied again after a Get). */
  readonly keep: (item: T) => boolean;
}

/** The items of a v1 List: a Get when it names an id, else every page, filtered. */
export async function listOrGet<T>(source: ListSource<T>): Promise<T[]> {
  const { what, id, get, page, keep } = source;
  if (id !== "") return (await getOrNothing(() => get(id))).filter(keep);
  return collectPages(what, page, keep);
}
