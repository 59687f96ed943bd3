import { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { formBodyToJson, isFormContentType } from "../../src/rest/form-body.js";
import { startTestServer } from "../helpers/test-server.js";

describe("form bodies", () => {
  it.each([
    ["application/x-www-form-urlencoded", true],
    ["Application/X-WWW-Form-Urlencoded; charset=utf-8", true],
    ["application/json", false],
    ["multipart/form-data", false],
    [undefined, false],
  ])("%s is a form: %s", (type, want) => {
    expect(isFormContentType(type)).toBe(want);
  });

  it("become the JSON object of a flat message, values as strings", () => {
    expect(JSON.parse(formBodyToJson("aud=https%3A%2F%2Fa.test&identity=x+y"))).toEqual({
      aud: "https://a.test",
      identity: "x y",
    });
    expect(formBodyToJson("")).toBe("{}");
  });

  it("refuse a key given twice", () => {
    expect(() => formBodyToJson("aud=a&aud=b")).toThrow(ConnectError);
  });

  it("reach only the RPCs that take them: elsewhere they are 415", async () => {
    const ts = await startTestServer();
    try {
      const org = await ts.makeOrg("forms");
      const post = (path: string, body: string, headers: Record<string, string> = {}) =>
        fetch(`${ts.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
          body,
        });
      // With a token (without one, the call is refused before its body is looked at: 401).
      expect((await post("/iam/v2beta1/groups", "name=x", org.owner.headers)).status).toBe(415);
      const sts = await post("/sts/exchange", `aud=${encodeURIComponent(ts.config.baseUrl)}`);
      // Past the body: the exchange itself answers (no bearer token).
      expect(sts.status).toBe(401);
      const twice = await post("/sts/exchange", "aud=a&aud=b");
      expect(twice.status).toBe(400);
      expect(((await twice.json()) as { message: string }).message).toMatch(/aud/);
    } finally {
      await ts.close();
    }
  });
});
