import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { createListEngine, type ListParams, pageTokenLifetimeMs } from "../../src/list/list.js";
import { sortValueOf } from "../../src/services/sort-value.js";
import type { GroupRecord, ListPage } from "../../src/store/store.js";

const key = Buffer.alloc(32, 7);
const org = "a".repeat(40);
const team = `${org}/0123456789abcdef`;

function clock(t = Date.UTC(2026, 10, 23)) {
  const c = { t, now: () => c.t };
  return c;
}

function params(p: Partial<ListParams> = {}): ListParams {
  return { name: "", pageSize: 0, pageToken: "", orderBy: "", skip: 0, ...p };
}

/** The fields that failed, if `fn` throws INVALID_ARGUMENT; fails the test otherwise. */
function badFields(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    const ce = ConnectError.from(e);
    expect(ce.code).toBe(Code.InvalidArgument);
    return ce.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => v.field));
  }
  throw new Error("expected INVALID_ARGUMENT");
}

function group(uid: string, name: string, t: number): GroupRecord {
  const g = { uid, parentUid: "", name, description: "", verified: false, resourceLimits: {} };
  return { ...g, createTime: t, updateTime: t + 1 };
}

/** A page of one item after which more follow: finish mints a token after `item`. */
function morePage(item = group(team, "team", 5)): ListPage<GroupRecord> {
  return { items: [item], total: 10, hasMore: true };
}

/** The next-page token of a first page parsed from `p`. */
function tokenFor(engine: ReturnType<typeof createListEngine>, p: Partial<ListParams> = {}) {
  const query = engine.parse(params(p), {});
  const token = engine.finish(query, morePage(), sortValueOf).nextPageToken;
  if (!token) throw new Error("expected a token");
  return token;
}

describe("list engine: parsing", () => {
  const engine = createListEngine({ key, now: clock().now });

  it.each([
    [0, 50],
    [1, 1],
    [50, 50],
    [199, 199],
    [200, 200],
    [201, 200],
    [1_000_000, 200],
  ])("page_size %i gives a limit of %i", (pageSize, limit) => {
    expect(engine.parse(params({ pageSize }), {}).limit).toBe(limit);
  });

  it.each([
    ["", "create_time", false],
    ["   ", "create_time", false],
    ["name", "name", false],
    ["name desc", "name", true],
    ["name DESC", "name", true],
    ["name Asc", "name", false],
    ["  name \t  desc  ", "name", true],
    ["create_time", "create_time", false],
    ["createTime desc", "create_time", true],
    ["created_at", "create_time", false],
    ["update_time", "update_time", false],
    ["updateTime desc", "update_time", true],
    ["uid desc", "uid", true],
  ])("order_by %j orders by %s (desc: %s)", (orderBy, field, desc) => {
    expect(engine.parse(params({ orderBy }), {}).order).toEqual({ field, desc });
  });

  it.each([
    "description",
    "Name",
    "name descending",
    "name desc extra",
    "name,uid",
    "name, uid",
    "desc",
    "-name",
    "constructor",
    "toString",
  ])("refuses order_by %j", (orderBy) => {
    expect(badFields(() => engine.parse(params({ orderBy }), {}))).toEqual(["order_by"]);
  });

  it.each([
    [{ pageSize: -1 }, ["page_size"]],
    [{ skip: -1 }, ["skip"]],
    [{ uidp: { descendantsOf: "not-a-uid", childrenOf: "" } }, ["uidp.descendants_of"]],
    [{ uidp: { descendantsOf: "", childrenOf: `${org}/XYZ` } }, ["uidp.children_of"]],
    [{ uidp: { descendantsOf: "", childrenOf: "", ancestorsOf: "x" } }, ["uidp.ancestors_of"]],
    [{ uidp: { descendantsOf: "", childrenOf: "", ids: [org, "x"] } }, ["uidp.ids"]],
    [
      { uidp: { descendantsOf: "", childrenOf: "", ids: Array(1001).fill(org) as string[] } },
      ["uidp.ids"],
    ],
    [{ pageSize: -5, skip: -1, orderBy: "nope" }, ["page_size", "skip", "order_by"]],
  ] as [Partial<ListParams>, string[]][])("refuses %j", (p, fields) => {
    expect(badFields(() => engine.parse(params(p), {}))).toEqual(fields);
  });

  it("carries filters, skip and scope into the query, leaving absent ones out", () => {
    const q = engine.parse(
      params({ name: "team", skip: 3, uidp: { descendantsOf: org, childrenOf: team } }),
      { digest: "sha256:x" },
      { scope: [org] },
    );
    expect(q).toMatchObject({
      name: "team",
      skip: 3,
      descendantsOf: org,
      childrenOf: team,
      filters: { digest: "sha256:x" },
      scope: [org],
    });
    // Resource filters may be declared as an interface with optional fields.
    interface TagFilters {
      digest?: string;
      updatedSince?: number;
    }
    const tagFilters: TagFilters = { digest: "sha256:y" };
    expect(engine.parse(params(), tagFilters).filters).toEqual(tagFilters);
    const bare = engine.parse(params(), {});
    for (const k of ["name", "descendantsOf", "childrenOf", "scope", "after"]) {
      expect(bare).not.toHaveProperty(k);
    }
  });
});

describe("list engine: finishing a page", () => {
  const engine = createListEngine({ key, now: clock().now });

  it("counts, echoes skip, and mints a token only when more follow", () => {
    const query = engine.parse(params({ skip: 2 }), {});
    const last = engine.finish(
      query,
      { items: [group(team, "t", 1)], total: 3, hasMore: false },
      sortValueOf,
    );
    expect(last).toEqual({ items: [group(team, "t", 1)], totalCount: 3n, skipped: 2 });
    const more = engine.finish(query, morePage(), sortValueOf);
    expect(more.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(more.totalCount).toBe(10n);
  });

  it.each([
    ["create_time", 5],
    ["update_time desc", 6],
    ["name", "team"],
    ["uid desc", team],
  ])("a token under order_by %j resumes after the last item's value", (orderBy, value) => {
    const token = tokenFor(engine, { orderBy });
    const next = engine.parse(params({ orderBy, pageToken: token, pageSize: 7, skip: 1 }), {});
    expect(next.after).toEqual({ value, uid: team });
    expect(next).toMatchObject({ limit: 7, skip: 1 });
  });
});

describe("list engine: page tokens", () => {
  const c = clock();
  const engine = createListEngine({ key, now: c.now });
  const bound = { orderBy: "name", name: "team", uidp: { descendantsOf: org, childrenOf: "" } };
  const token = tokenFor(engine, bound);
  const refused = (p: Partial<ListParams>, filters: Record<string, string> = {}, caller?: string) =>
    badFields(() =>
      engine.parse(params({ ...p, pageToken: p.pageToken ?? token }), filters, {
        ...(caller ? { caller } : {}),
      }),
    );

  it("is accepted with the same filters and order", () => {
    expect(engine.parse(params({ ...bound, pageToken: token }), {}).after).toBeDefined();
  });

  const flip = (t: string, i: number) => {
    const raw = Buffer.from(t, "base64url");
    raw[(i + raw.length) % raw.length]! ^= 1;
    return raw.toString("base64url");
  };
  it.each([
    ["a flipped version byte", () => flip(token, 0)],
    ["a flipped MAC byte", () => flip(token, 5)],
    ["a flipped payload byte", () => flip(token, 40)],
    ["a flipped last byte", () => flip(token, -1)],
    ["a truncated token", () => token.slice(0, -4)],
    ["a token cut to its MAC", () => token.slice(0, 44)],
    ["an extended token", () => `${token}AAAA`],
    ["a non-base64url character", () => `${token.slice(0, 10)}*${token.slice(11)}`],
    ["garbage", () => "hello"],
    ["a huge string", () => "A".repeat(10_000)],
    [
      "another server's token",
      () => tokenFor(createListEngine({ key: Buffer.alloc(32, 8), now: c.now }), bound),
    ],
  ])("refuses %s", (_what, make) => {
    expect(refused({ ...bound, pageToken: make() })).toEqual(["page_token"]);
  });

  it.each([
    ["another name", { ...bound, name: "other" }],
    ["no name", { ...bound, name: "" }],
    ["another descendants_of", { ...bound, uidp: { descendantsOf: team, childrenOf: "" } }],
    ["children_of instead", { ...bound, uidp: { descendantsOf: "", childrenOf: org } }],
    ["ancestors_of added", { ...bound, uidp: { ...bound.uidp!, ancestorsOf: team } }],
    ["in_root added", { ...bound, uidp: { ...bound.uidp!, inRoot: true } }],
    ["ids added", { ...bound, uidp: { ...bound.uidp!, ids: [team] } }],
    ["another order field", { ...bound, orderBy: "uid" }],
    ["another direction", { ...bound, orderBy: "name desc" }],
  ])("refuses reuse with %s", (_what, p) => {
    expect(refused(p)).toEqual(["page_token"]);
  });

  it("takes the later uidp filters left empty as absent (a token minted without them goes on)", () => {
    const empty = { ...bound.uidp!, ancestorsOf: "", inRoot: false, ids: [] };
    expect(
      engine.parse(params({ ...bound, uidp: empty, pageToken: token }), {}).after,
    ).toBeDefined();
  });

  it("binds uidp.ids as a set: the same uids in another order and repeated are the same filter", () => {
    const ids = { ...bound, uidp: { ...bound.uidp!, ids: [org, team] } };
    const t = tokenFor(engine, ids);
    const again = { ...bound, uidp: { ...bound.uidp!, ids: [team, org, team] }, pageToken: t };
    expect(engine.parse(params(again), {}).after).toBeDefined();
  });

  it("accepts another spelling of the same order", () => {
    const t = tokenFor(engine, { orderBy: "createTime desc" });
    const q = engine.parse(params({ orderBy: "create_time DESC", pageToken: t }), {});
    expect(q.after).toBeDefined();
  });

  it("binds resource filters and the caller", () => {
    const first = engine.parse(
      params(bound),
      { digest: "d1", gone: undefined },
      { caller: "alice" },
    );
    const t = engine.finish(first, morePage(), sortValueOf).nextPageToken!;
    const again = (filters: Record<string, string | undefined>, caller?: string) =>
      engine.parse(params({ ...bound, pageToken: t }), filters, caller ? { caller } : {});
    expect(again({ digest: "d1" }, "alice").after).toBeDefined();
    expect(badFields(() => again({ digest: "d2" }, "alice"))).toEqual(["page_token"]);
    expect(badFields(() => again({ digest: "d1", extra: "x" }, "alice"))).toEqual(["page_token"]);
    expect(badFields(() => again({ digest: "d1" }, "mallory"))).toEqual(["page_token"]);
    expect(badFields(() => again({ digest: "d1" }))).toEqual(["page_token"]);
  });

  it("is good for three days, then silently restarts from the first page", () => {
    const t0 = c.t;
    const fresh = tokenFor(engine, bound);
    const parse = () => engine.parse(params({ ...bound, pageToken: fresh }), {});
    c.t = t0 + pageTokenLifetimeMs;
    expect(parse().after).toBeDefined();
    c.t = t0 + pageTokenLifetimeMs + 1;
    expect(parse()).not.toHaveProperty("after");
    c.t = t0;
  });
});
