import { describe, expect, it } from "vitest";
import {
  decodeSegment,
  PathTemplateError,
  parsePathTemplate,
  variableValues,
} from "../../src/rest/path-template.js";
import { createRouteTable } from "../../src/rest/route-table.js";

describe("parsePathTemplate", () => {
  it.each([
    ["/v1/things", ["v1", "things"], [], ""],
    ["/v1/things/{uid}", ["v1", "things", "*"], [["uid", 2, 3]], ""],
    ["/v1/things/{uid=**}", ["v1", "things", "**"], [["uid", 2, -1]], ""],
    [
      "/v1/{name=projects/*/things/*}",
      ["v1", "projects", "*", "things", "*"],
      [["name", 1, 5]],
      "",
    ],
    ["/v1/{group.uid=**}", ["v1", "**"], [["group.uid", 1, -1]], ""],
    ["/v1/*/x/**", ["v1", "*", "x", "**"], [], ""],
    ["/iam/v2beta1/groupInvites:redeem", ["iam", "v2beta1", "groupInvites"], [], "redeem"],
    ["/v1/{name=**}:cancel", ["v1", "**"], [["name", 1, -1]], "cancel"],
    [
      "/v1/{a}/{b.c}",
      ["v1", "*", "*"],
      [
        ["a", 1, 2],
        ["b.c", 2, 3],
      ],
      "",
    ],
  ])("parses %s", (source, segments, variables, verb) => {
    const t = parsePathTemplate(source);
    expect(
      t.segments.map((s) => (s.kind === "literal" ? s.value : s.kind === "wildcard" ? "*" : "**")),
    ).toEqual(segments);
    expect(t.variables.map((v) => [v.fieldPath, v.start, v.end])).toEqual(variables);
    expect(t.verb).toBe(verb);
    expect(t.source).toBe(source);
  });

  it.each([
    ["", "must start with `/`"],
    ["v1/things", "must start with `/`"],
    ["/", "empty segment"],
    ["/v1//things", "empty segment"],
    ["/v1/things/", "empty segment"],
    ["/v1/**/things", "`**` must be the last segment"],
    ["/v1/{uid=**}/x", "`**` must be the last segment"],
    ["/v1/{uid", "unclosed"],
    ["/v1/uid}", 'unexpected "}"'],
    ["/v1/{uid=a/{b}}", "nested variable"],
    ["/v1/{9uid}", "bad field path"],
    ["/v1/{a..b}", "bad field path"],
    ["/v1/{}", "bad field path"],
    ["/v1/{a}/{a}", "appears twice"],
    ["/v1/{a}/{a.b}", "overlap"],
    ["/v1/x:", "empty segment"],
    ["/v1/x:a/b", "the verb must end the template"],
    ["/v1/a b", "invalid character"],
    ["/v1/a?b", "invalid character"],
    ["/v1/{uid=*}x", 'unexpected "x"'],
    ["/v1/{uid=*", "unclosed"],
  ])("rejects %j (%s)", (source, reason) => {
    expect(() => parsePathTemplate(source)).toThrow(PathTemplateError);
    expect(() => parsePathTemplate(source)).toThrow(reason);
  });
});

describe("variableValues", () => {
  it.each([
    ["/v1/things/{uid=**}", ["v1", "things", "abc", "def"], ["abc/def"]],
    ["/v1/things/{uid=**}", ["v1", "things"], [""]],
    ["/v1/things/{uid}", ["v1", "things", "a%20b"], ["a b"]],
    // One segment: everything is decoded, even a slash.
    ["/v1/things/{uid}", ["v1", "things", "a%2Fb"], ["a/b"]],
    // Several segments: %2F stays encoded, so slashes in the value are separators only.
    ["/v1/things/{uid=**}", ["v1", "things", "a%2fb", "c%3Ad"], ["a%2Fb/c:d"]],
    ["/v1/{a}/{b=x/*}", ["v1", "1", "x", "2"], ["1", "x/2"]],
    ["/v1/{a}", ["v1", "%zz"], [undefined]],
  ])("%s over %j", (source, segments, values) => {
    expect(variableValues(parsePathTemplate(source), segments)).toEqual(values);
  });

  it("leaves segments without escapes alone", () => {
    expect(decodeSegment("plain", false)).toBe("plain");
    expect(decodeSegment("%E2%82%AC", false)).toBe("€");
    expect(decodeSegment("%E2%82", false)).toBeUndefined();
  });
});

describe("createRouteTable", () => {
  const routes = [
    ["GET", "/iam/v2beta1/groups", "list"],
    ["GET", "/iam/v2beta1/groups/{uid=**}", "get"],
    ["POST", "/iam/v2beta1/groups/{parent=**}", "create"],
    ["PATCH", "/iam/v2beta1/groups/{group.uid=**}", "update"],
    ["DELETE", "/iam/v2beta1/groups/{uid=**}", "delete"],
    ["POST", "/iam/v2beta1/groupInvites/{parent=**}", "createInvite"],
    ["POST", "/iam/v2beta1/groupInvites:redeem", "redeem"],
    ["GET", "/v1/{name=shelves/*}", "getShelf"],
    ["GET", "/v1/shelves/special", "special"],
    ["GET", "/v1/{name=shelves/*/books/*}", "getBook"],
    ["GET", "/v1/{name=**}", "anything"],
    ["POST", "/v1/{name=**}:cancel", "cancel"],
    ["GET", "/v2/a%20b", "encodedLiteral"],
  ].map(([httpMethod, source, name]) => ({
    httpMethod: httpMethod!,
    template: parsePathTemplate(source!),
    name: name!,
  }));
  const table = createRouteTable(routes);
  const match = (method: string, path: string) => {
    const m = table.match(method, path);
    return m && { name: m.route.name, values: variableValues(m.route.template, m.segments) };
  };

  it.each([
    ["GET", "/iam/v2beta1/groups", "list", []],
    ["GET", "/iam/v2beta1/groups/abc", "get", ["abc"]],
    ["GET", "/iam/v2beta1/groups/abc/def/0123", "get", ["abc/def/0123"]],
    // Zero segments: creating an organization has no parent.
    ["POST", "/iam/v2beta1/groups", "create", [""]],
    ["POST", "/iam/v2beta1/groups/abc/def", "create", ["abc/def"]],
    ["PATCH", "/iam/v2beta1/groups/abc/def", "update", ["abc/def"]],
    ["DELETE", "/iam/v2beta1/groups/abc", "delete", ["abc"]],
    // The custom verb beats the `**` of the same collection.
    ["POST", "/iam/v2beta1/groupInvites:redeem", "redeem", []],
    ["POST", "/iam/v2beta1/groupInvites", "createInvite", [""]],
    ["POST", "/iam/v2beta1/groupInvites/abc", "createInvite", ["abc"]],
    // A colon that is no known verb stays part of the segment.
    ["GET", "/iam/v2beta1/groups/abc:def", "get", ["abc:def"]],
    ["POST", "/iam/v2beta1/groupInvites/abc:redeem", "createInvite", ["abc:redeem"]],
    // Literal beats `*`, which beats `**`.
    ["GET", "/v1/shelves/special", "special", []],
    ["GET", "/v1/shelves/s1", "getShelf", ["shelves/s1"]],
    ["GET", "/v1/shelves/s1/books/b1", "getBook", ["shelves/s1/books/b1"]],
    ["GET", "/v1/shelves/s1/books", "anything", ["shelves/s1/books"]],
    ["GET", "/v1/other", "anything", ["other"]],
    ["POST", "/v1/ops/1:cancel", "cancel", ["ops/1"]],
    // Literals are compared decoded.
    ["GET", "/v2/a%20b", "encodedLiteral", []],
    ["GET", "/v2/a b", "encodedLiteral", []],
  ])("%s %s -> %s", (method, path, name, values) => {
    expect(match(method, path)).toEqual({ name, values });
  });

  it.each([
    ["GET", "/iam/v2beta1/nothing"],
    ["GET", "/iam"],
    ["GET", "/"],
    ["GET", "*"],
    ["PUT", "/iam/v2beta1/groups/abc"],
    ["POST", "/iam/v2beta1/groups:redeem"],
    ["GET", "/v2/a%zz"],
  ])("%s %s matches nothing", (method, path) => {
    expect(table.match(method, path)).toBeUndefined();
  });

  it("tells which methods a path has", () => {
    expect(table.allowedMethods("/iam/v2beta1/groups/abc")).toEqual([
      "GET",
      "POST",
      "PATCH",
      "DELETE",
    ]);
    // `**` matches zero segments, so the collection path reaches Update and Delete (with an
    // empty uid, which their handlers refuse).
    expect(table.allowedMethods("/iam/v2beta1/groups")).toEqual(["GET", "POST", "PATCH", "DELETE"]);
    expect(table.allowedMethods("/v1/shelves/special")).toEqual(["GET"]);
    expect(table.allowedMethods("/iam/v2beta1/groupInvites:redeem")).toEqual(["POST"]);
    expect(table.allowedMethods("/nowhere")).toEqual([]);
  });

  it.each([
    ["/v1/{a}", "/v1/{b}"],
    ["/v1/{a=**}", "/v1/**"],
    ["/v1/x:go", "/v1/x:go"],
  ])("refuses %s and %s on one method", (a, b) => {
    const routes = [a, b].map((s) => ({ httpMethod: "GET", template: parsePathTemplate(s) }));
    expect(() => createRouteTable(routes)).toThrow(/conflicting REST routes/);
  });

  it("lets the same template serve different methods and verbs", () => {
    const routes = [
      ["GET", "/v1/{a}"],
      ["POST", "/v1/{a}"],
      ["POST", "/v1/{a}:go"],
    ].map(([m, s]) => ({ httpMethod: m!, template: parsePathTemplate(s!) }));
    expect(() => createRouteTable(routes)).not.toThrow();
  });
});
