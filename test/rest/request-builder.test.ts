import { type DescService, type JsonValue, type Message, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { compileHttpRules, type RestRule } from "../../src/rest/http-rules.js";
import { createRequestBuilder } from "../../src/rest/request-builder.js";
import { createRouteTable } from "../../src/rest/route-table.js";
import { type RuleInit, thingsFixture } from "./fixtures.js";

function gatewayOf(service: DescService) {
  const table = createRouteTable(compileHttpRules([service]));
  /** Build the request message of `method url` with `body`, as the gateway would. */
  return (method: string, url: string, body = "") => {
    const [path = "", query = ""] = url.split("?");
    const m = table.match(method, path);
    if (!m) throw new Error(`no route for ${method} ${path}`);
    const message = createRequestBuilder(m.route)({ segments: m.segments, query, body });
    return { rule: m.route, message };
  };
}

const things = gatewayOf(thingsFixture().service);
const groups = gatewayOf(GroupsService);

/** The request as protojson (camelCase, defaults left out). */
function json(build: typeof things, method: string, url: string, body = ""): JsonValue {
  const { rule, message } = build(method, url, body);
  return toJson(rule.method.input, message);
}

/** The field and message of the INVALID_ARGUMENT `fn` throws. */
function violation(fn: () => unknown): { field: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    const ce = err as ConnectError;
    expect(ce.code).toBe(Code.InvalidArgument);
    const field = ce.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field ?? "";
    return { field, message: ce.rawMessage };
  }
  throw new Error("expected INVALID_ARGUMENT");
}

const maskOf = (m: Message): string[] | undefined =>
  (m as unknown as { updateMask?: { paths: string[] } }).updateMask?.paths;

describe("query parameters", () => {
  it.each<[string, JsonValue]>([
    ["page_size=10", { pageSize: 10 }],
    ["pageSize=10", { pageSize: 10 }],
    ["uidp.descendants_of=a/b", { uidp: { descendantsOf: "a/b" } }],
    ["uidp.descendantsOf=a&uidp.children_of=b", { uidp: { descendantsOf: "a", childrenOf: "b" } }],
    ["thing.name=x&thing.inner.depth=3", { thing: { name: "x", inner: { depth: 3 } } }],
    ["tags=a&tags=b&tags=a", { tags: ["a", "b", "a"] }],
    ["min_size=9007199254740993", { minSize: "9007199254740993" }],
    ["minSize=-9223372036854775808", { minSize: "-9223372036854775808" }],
    ["max_size=18446744073709551615", { maxSize: "18446744073709551615" }],
    ["sizes=1&sizes=-2", { sizes: ["1", "-2"] }],
    ["show_deleted=true", { showDeleted: true }],
    ["showDeleted=1", { showDeleted: true }],
    ["show_deleted=false", {}],
    ["kind=LARGE", { kind: "LARGE" }],
    ["kind=1", { kind: "SMALL" }],
    ["kinds=SMALL&kinds=LARGE", { kinds: ["SMALL", "LARGE"] }],
    ["ratio=0.5", { ratio: 0.5 }],
    ["ratio=-1e3", { ratio: -1000 }],
    ["blob=aGk%3D", { blob: "aGk=" }],
    ["after=2026-11-22T07:30:00.123Z", { after: "2026-11-22T07:30:00.123Z" }],
    ["name=a%20b+c%2Fd", { name: "a b c/d" }],
    ["name=", {}],
    [
      "read_mask=name,expireTime,inner.descendantsOf",
      { readMask: "name,expireTime,inner.descendantsOf" },
    ],
  ])("?%s", (query, expected) => {
    expect(json(things, "GET", `/v1/things?${query}`)).toEqual(expected);
  });

  it("turns FieldMask paths in camelCase into proto names", () => {
    const { message } = things(
      "GET",
      "/v1/things?readMask=name, expireTime ,inner.descendantsOf,*",
    );
    expect((message as unknown as { readMask: { paths: string[] } }).readMask.paths).toEqual([
      "name",
      "expire_time",
      "inner.descendants_of",
      "*",
    ]);
  });

  it.each([
    ["page_size=abc", "page_size", "expected an integer"],
    ["page_size=1.5", "page_size", "expected an integer"],
    ["page_size=", "page_size", "expected an integer"],
    ["pageSize=2147483648", "page_size", "expected an integer"],
    ["min_size=1e3", "min_size", "64-bit"],
    ["min_size=9223372036854775808", "min_size", "64-bit"],
    ["max_size=-1", "max_size", "unsigned"],
    ["sizes=1&sizes=x", "sizes", "64-bit"],
    ["show_deleted=yes", "show_deleted", "true or false"],
    ["kind=HUGE", "kind", "SMALL"],
    ["ratio=abc", "ratio", "expected a number"],
    ["blob=***", "blob", "base64"],
    ["after=yesterday", "after", "Timestamp"],
    ["bogus=1", "bogus", "unknown query parameter"],
    ["uidp.bogus=1", "uidp.bogus", "unknown query parameter"],
    ["name.x=1", "name.x", "unknown query parameter"],
    ["uidp=x", "uidp", "message field"],
    ["thing.parts=x", "thing.parts", "message field"],
    ["thing.labels=x", "thing.labels", "message field"],
    ["name=a&name=b", "name", "more than once"],
    ["page_size=1&pageSize=2", "page_size", "more than once"],
  ])("?%s is INVALID_ARGUMENT on %s", (query, field, why) => {
    const v = violation(() => things("GET", `/v1/things?${query}`));
    expect(v.field).toBe(field);
    expect(v.message).toContain(`Invalid argument: ${field}: `);
    expect(v.message).toContain(why);
  });

  it.each([
    ["GET", "/v1/things/abc?uid=zzz", "", "uid", "set by the URL path"],
    ["PATCH", "/v1/things/abc?thing.uid=zzz", "{}", "thing.uid", "set by the URL path"],
    ["PATCH", "/v1/things/abc?thing.name=x", "{}", "thing.name", "bound to the request body"],
    ["POST", "/v1/things/p?thing=x", "{}", "thing", "message field"],
    ["POST", "/v1/things:redeem?code=x", '{"code":"y"}', "code", "set by both"],
  ])("%s %s may not set a bound field", (method, url, body, field, why) => {
    const v = violation(() => things(method, url, body));
    expect(v).toMatchObject({ field });
    expect(v.message).toContain(why);
  });

  it("may set fields the path and body leave alone", () => {
    expect(json(things, "POST", "/v1/things/p?validate_only=true", '{"name":"n"}')).toEqual({
      parent: "p",
      thing: { name: "n" },
      validateOnly: true,
    });
    // With body "*", a query parameter may set what the body did not (POST /sts/exchange?aud=).
    expect(json(things, "POST", "/v1/things:redeem?parent=p", '{"code":"c"}')).toEqual({
      code: "c",
      parent: "p",
    });
    expect(json(things, "GET", "/v1/things:redeem?code=c")).toEqual({ code: "c" });
  });
});

describe("body", () => {
  it.each<[string, string, JsonValue]>([
    [
      "a named body field",
      '{"name":"n","size":"12","labels":{"x":1},"expireTime":"2026-01-01T00:00:00Z","kind":"LARGE"}',
      {
        parent: "a/b",
        thing: {
          name: "n",
          size: "12",
          labels: { x: 1 },
          expireTime: "2026-01-01T00:00:00Z",
          kind: "LARGE",
        },
      },
    ],
    [
      "proto field names",
      '{"expire_time":"2026-01-01T00:00:00Z"}',
      { parent: "a/b", thing: { expireTime: "2026-01-01T00:00:00Z" } },
    ],
    ["an int64 given as a number", '{"size":12}', { parent: "a/b", thing: { size: "12" } }],
    ["an empty body", "", { parent: "a/b" }],
    ["a blank body", " \n", { parent: "a/b" }],
    ["an empty object", "{}", { parent: "a/b", thing: {} }],
  ])("reads %s", (_, body, expected) => {
    expect(json(things, "POST", "/v1/things/a/b", body)).toEqual(expected);
  });

  it.each([
    ["unknown field", '{"bogus":1}', "thing.bogus", "unknown field"],
    ["nested unknown field", '{"inner":{"x":1}}', "thing.inner.x", "unknown field"],
    ["wrong type", '{"name":5}', "thing.name", "expected string, got 5"],
    ["bad int64", '{"size":"abc"}', "thing.size", ""],
    ["bad bool", '{"enabled":"yes"}', "thing.enabled", "expected boolean"],
    ["bad enum", '{"kind":"HUGE"}', "thing.kind", "HUGE"],
    ["bad timestamp", '{"expireTime":"yesterday"}', "thing.expire_time", "RFC 3339"],
    ["bad map value", '{"labels":{"x":"y"}}', "thing.labels", "int32"],
    ["bad list item", '{"parts":[{},{"depth":"x"}]}', "thing.parts[1].depth", ""],
    ["unknown in list item", '{"parts":[{"nope":1}]}', "thing.parts[0].nope", "unknown field"],
    ["not an object", "[]", "thing", "expected a JSON object, got an array"],
    ["a string", '"x"', "thing", "expected a JSON object, got a string"],
    ["nested not an object", '{"inner":3}', "thing.inner", "expected a JSON object, got a number"],
    ["malformed JSON", '{"name":', "thing", "malformed JSON"],
    ["trailing garbage", '{"name":"x"} x', "thing", "malformed JSON"],
  ])("refuses %s", (_, body, field, why) => {
    const v = violation(() => things("POST", "/v1/things/a", body));
    expect(v.field).toBe(field);
    expect(v.message).toContain(`Invalid argument: ${field}: `);
    expect(v.message).toContain(why);
  });

  it.each([
    ["unknown field", '{"bogus":1}', "bogus"],
    ["malformed JSON", "{", "body"],
    ["not an object", "1", "body"],
  ])("body * refuses %s", (_, body, field) => {
    expect(violation(() => things("POST", "/v1/things:redeem", body)).field).toBe(field);
  });

  it("refuses a body where the rule takes none", () => {
    const v = violation(() => things("GET", "/v1/things/abc", '{"uid":"x"}'));
    expect(v).toMatchObject({ field: "body" });
    expect(v.message).toContain("takes no request body");
  });
});

describe("path variables", () => {
  it.each<[string, string, string, JsonValue]>([
    ["GET", "/v1/things/abc", "", { uid: "abc" }],
    ["GET", "/v1/things/abc/def", "", { uid: "abc/def" }],
    ["GET", "/v1/things/a%20b/c%2Fd", "", { uid: "a b/c%2Fd" }],
    ["POST", "/v1/things", '{"name":"n"}', { thing: { name: "n" } }],
    // The path wins over the body.
    [
      "PATCH",
      "/v1/things/a/b",
      '{"uid":"zzz","name":"n"}',
      { thing: { uid: "a/b", name: "n" }, updateMask: "uid,name" },
    ],
  ])("%s %s", (method, url, body, expected) => {
    expect(json(things, method, url, body)).toEqual(expected);
  });

  it("refuses malformed percent-encoding", () => {
    expect(violation(() => things("GET", "/v1/things/a%zz")).field).toBe("uid");
  });

  it("sets path variables of other types from text", () => {
    const rules: Record<string, RuleInit> = {
      ListThings: { pattern: { case: "get", value: "/v1/sizes/{min_size}/{show_deleted}/{kind}" } },
    };
    const build = gatewayOf(thingsFixture(rules).service);
    expect(json(build, "GET", "/v1/sizes/-12/true/LARGE")).toEqual({
      minSize: "-12",
      showDeleted: true,
      kind: "LARGE",
    });
    expect(violation(() => build("GET", "/v1/sizes/x/true/LARGE")).field).toBe("min_size");
  });
});

describe("implicit update mask", () => {
  it.each<[string, string, string[] | undefined]>([
    ["", '{"description":""}', ["description"]],
    [
      "",
      '{"name":"n","expireTime":"2026-01-01T00:00:00Z","uid":"x"}',
      ["name", "expire_time", "uid"],
    ],
    ["", '{"expire_time":"2026-01-01T00:00:00Z"}', ["expire_time"]],
    // An empty object (or no body) changes nothing: the mask is there, and empty.
    ["", "{}", []],
    ["", "", []],
    // null is not an object: no keys to speak of, the service decides from populated fields.
    ["", "null", undefined],
    ["?updateMask=name", '{"name":"n","description":"d"}', ["name"]],
    [
      "?update_mask=expireTime,inner.descendantsOf",
      '{"name":"n"}',
      ["expire_time", "inner.descendants_of"],
    ],
    ["?updateMask=*", '{"name":"n"}', ["*"]],
  ])("PATCH%s with %s", (query, body, mask) => {
    const { message } = things("PATCH", `/v1/things/a${query}`, body);
    expect(maskOf(message)).toEqual(mask);
  });

  it("is not made for a body that is the whole request", () => {
    const { rule } = things("POST", "/v1/things:redeem", "{}");
    expect((rule as RestRule).updateMask).toBeUndefined();
  });
});

describe("over the Groups API", () => {
  it.each<[string, string, string, JsonValue]>([
    [
      "GET",
      "/iam/v2beta1/groups?uidp.childrenOf=r&page_size=2&order_by=name%20desc",
      "",
      {
        uidp: { childrenOf: "r" },
        pageSize: 2,
        orderBy: "name desc",
      },
    ],
    ["GET", "/iam/v2beta1/groups/r/c", "", { uid: "r/c" }],
    ["POST", "/iam/v2beta1/groups", '{"name":"acme"}', { group: { name: "acme" } }],
    ["POST", "/iam/v2beta1/groups/r", '{"name":"team"}', { parent: "r", group: { name: "team" } }],
    [
      "PATCH",
      "/iam/v2beta1/groups/r/c",
      '{"description":""}',
      {
        group: { uid: "r/c" },
        updateMask: "description",
      },
    ],
    ["DELETE", "/iam/v2beta1/groups/r/c", "", { uid: "r/c" }],
  ])("%s %s", (method, url, body, expected) => {
    expect(json(groups, method, url, body)).toEqual(expected);
  });

  it("refuses output-only JSON it does not know and names the field", () => {
    expect(
      violation(() => groups("POST", "/iam/v2beta1/groups", '{"name":"a","colour":1}')).field,
    ).toBe("group.colour");
  });
});
